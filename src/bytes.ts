// Byte buffers joined: the one copy that turns the chunks of a stream (an HTTP body, an SMTP
// message) into a single buffer.

/** One fresh buffer of `size` bytes: its ArrayBuffer holds exactly the chunks, nothing of their buffers. */
export function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
