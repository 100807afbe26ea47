// Request ids. The service makes its own id for every request; that id is the one its log lines,
// its 500 answers and X-Service-Request-Id carry, so a client cannot choose, reuse or forge the id an
// operator looks a request up by. A client's own X-Request-Id, when well formed, is logged beside it
// as `clientRequestId` and echoed in X-Request-Id (CONTRACT section 1).
import { randomId } from "../ids.ts";

/** The X-Request-Id a client may send: 1 to 128 visible ASCII characters (no spaces). */
export const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The header that always carries the service's own id. */
export const SERVICE_REQUEST_ID_HEADER = "x-service-request-id";

export interface RequestIds {
  /** The service's own id: 20 random letters and digits. */
  requestId: string;
  /** The client's X-Request-Id when it is well formed; anything else is ignored. */
  clientRequestId?: string;
}

/** A fresh own id, and the client's id beside it when it sent a well-formed one. */
export function requestIdsOf(sent: string | null | undefined): RequestIds {
  const requestId = randomId(20);
  return sent && CLIENT_REQUEST_ID.test(sent) ? { requestId, clientRequestId: sent } : { requestId };
}

/** The answer's headers: X-Request-Id echoes the client's id (else ours), ours always beside it. */
export function requestIdHeaders(ids: RequestIds): Record<string, string> {
  return { "x-request-id": ids.clientRequestId ?? ids.requestId, [SERVICE_REQUEST_ID_HEADER]: ids.requestId };
}
