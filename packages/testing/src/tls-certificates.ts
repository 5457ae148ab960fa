// A throwaway PKI for TLS tests, made with the openssl CLI at test time (no certificate is ever
// committed): a CA, a server certificate for 127.0.0.1/localhost and a client certificate, each
// signed by the CA. EC keys: quicker to make than RSA and accepted by Redis and Node alike.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { TestServerError } from "./errors.ts";

const run = promisify(execFile);

/** Paths of the PEM files in `dir`. */
export interface TlsCertificates {
  dir: string;
  /** The CA's certificate: what clients trust (`tls.ca`) and the server checks client certificates against. */
  ca: string;
  serverCert: string;
  serverKey: string;
  /** A client certificate (CN=flotilla-client) for servers that require one (`tls-auth-clients yes`). */
  clientCert: string;
  clientKey: string;
  /** Removes the directory. */
  remove(): void;
}

const KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Makes the CA, server and client certificates (valid two days) in a new temporary directory. */
export async function makeTlsCertificates(openssl = "openssl"): Promise<TlsCertificates> {
  const dir = mkdtempSync(join(tmpdir(), "flotilla-tls-"));
  const at = (name: string) => join(dir, name);
  const openSsl = async (...args: string[]) => {
    try {
      await run(openssl, args, { cwd: dir });
    } catch (err) {
      const e = err as { code?: string; stderr?: string; message: string };
      const why = e.code === "ENOENT" ? `${openssl} is not installed (the TLS tests need the openssl CLI)` : (e.stderr?.trim() ?? e.message);
      throw new TestServerError(`could not make TLS certificates: ${why}`, err);
    }
  };
  const signed = async (name: string, subject: string, extensions: string) => {
    writeFileSync(at(`${name}.ext`), extensions);
    await openSsl("req", "-new", ...KEY, "-keyout", at(`${name}.key`), "-out", at(`${name}.csr`), "-subj", subject);
    await openSsl(
      ...["x509", "-req", "-in", at(`${name}.csr`), "-CA", at("ca.crt"), "-CAkey", at("ca.key"), "-CAcreateserial"],
      ...["-out", at(`${name}.crt`), "-days", "2", "-extfile", at(`${name}.ext`)],
    );
  };
  try {
    await openSsl("req", "-x509", "-new", ...KEY, "-keyout", at("ca.key"), "-out", at("ca.crt"), "-days", "2", "-subj", "/CN=Flotilla Test CA");
    // Node checks the host name against the subjectAltName only, never the CN.
    await signed("server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    await signed("client", "/CN=flotilla-client", "extendedKeyUsage=clientAuth\n");
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    ca: at("ca.crt"),
    serverCert: at("server.crt"),
    serverKey: at("server.key"),
    clientCert: at("client.crt"),
    clientKey: at("client.key"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
