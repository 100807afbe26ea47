// The sample attachment of test deliveries: a real one-page PDF, built once with exact xref offsets
// so PDF readers open it without repair.
import { SERVICE_OWNER } from "./store.ts";
import type { AttachmentRef } from "./signed_link.ts";

export const SAMPLE_ATTACHMENT_ID = "sample-test-attachment";
export const SAMPLE_FILENAME = "test-attachment.pdf";

function buildPdf(text: string): Uint8Array {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> " +
    "/Contents 5 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
  ];
  let pdf = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, "0")} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  // Plain ASCII throughout, so string lengths are byte offsets.
  return new TextEncoder().encode(pdf);
}

export const SAMPLE_PDF: Uint8Array = buildPdf("Test attachment from credit-api");

export const SAMPLE_ATTACHMENT = {
  id: SAMPLE_ATTACHMENT_ID,
  filename: SAMPLE_FILENAME,
  contentType: "application/pdf",
  content: SAMPLE_PDF,
};

export const SAMPLE_ATTACHMENT_REF: AttachmentRef = {
  owner: SERVICE_OWNER,
  id: SAMPLE_ATTACHMENT_ID,
  filename: SAMPLE_FILENAME,
  size: SAMPLE_PDF.byteLength,
  contentType: "application/pdf",
};
