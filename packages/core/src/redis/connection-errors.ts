// Why a connection could not be made, in words an operator can act on. Node's TLS errors name the
// failed check, not the setting that fixes it, and a server that wants a client certificate just
// drops the connection (ECONNRESET).

/** Node's codes for a server certificate that does not chain up to a trusted CA. */
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
]);
const EXPIRED = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID"]);

/** What the connection was opened with, as far as the hints need it. */
export interface ConnectionTls {
  /** TLS is on (`rediss://`, or `tls` options). */
  tls: boolean;
  /** A client certificate is presented (`tls.cert`). */
  clientCertificate: boolean;
  /** Through Sentinel: the master's name. */
  sentinelName?: string;
}

/** What a sentinel answers GET-MASTER-ADDR-BY-NAME for a name it does not monitor (an error, or nothing, by version). */
const UNKNOWN_MASTER = /No such master with that name|successfully, but got an invalid reply: null/;

/** The error's message, with what to do about it when the cause is a TLS setting. */
export function explainConnectionError(err: Error, conn: ConnectionTls): string {
  const code = String((err as { code?: unknown }).code ?? "");
  const message = err.message;
  if (UNTRUSTED.has(code)) return `TLS: the server's certificate is not trusted (${message}): give the CA that signed it (tls.ca)`;
  if (EXPIRED.has(code)) return `TLS: the server's certificate is not valid now (${message})`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return `TLS: the server's certificate is not for this host (${message}): connect by a name it lists, or set tls.servername`;
  if (conn.sentinelName !== undefined && UNKNOWN_MASTER.test(message)) return `${message}: the sentinels know no master named "${conn.sentinelName}"`;
  if (/wrong version number|packet length too long/i.test(message)) return `TLS: the server did not answer in TLS (${message}): is it a plain redis:// port?`;
  if (conn.tls && !conn.clientCertificate && (code === "ECONNRESET" || /certificate required/i.test(message))) {
    return `${message} (a server that requires client certificates closes TLS connections without one: give tls.cert and tls.key)`;
  }
  return message;
}
