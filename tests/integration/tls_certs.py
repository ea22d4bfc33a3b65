"""A throwaway certificate authority for tests, made with the openssl command line: a CA, a
server certificate for 127.0.0.1/localhost, and client certificates."""

import pathlib
import subprocess


def run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class CertificateAuthority:
    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_cert = self.dir / "ca.pem"
        self.ca_key = self.dir / "ca.key"
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", self.ca_key, "-out", self.ca_cert, "-days", "2", "-subj", "/CN=Shoal Test CA",
            cwd=self.dir)

    def issue(self, name, subject, server=False):
        """(certificate, key) signed by the CA; a server's names 127.0.0.1 and localhost."""
        key, csr, cert = (self.dir / f"{name}.key", self.dir / f"{name}.csr",
                          self.dir / f"{name}.pem")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subject, cwd=self.dir)
        extensions = self.dir / f"{name}.ext"
        usage = "serverAuth" if server else "clientAuth"
        lines = ["basicConstraints=CA:FALSE", f"extendedKeyUsage={usage}"]
        if server:
            lines.append("subjectAltName=IP:127.0.0.1,DNS:localhost")
        extensions.write_text("\n".join(lines) + "\n")
        run("x509", "-req", "-in", csr, "-CA", self.ca_cert, "-CAkey", self.ca_key,
            "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", extensions, cwd=self.dir)
        return cert, key
