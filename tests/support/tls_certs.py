"""Test certificates made with the `cryptography` package: a CA and server certificates for
loopback, valid for a day. Independent of memhealth's own generator (telemetry/team_secrets.py),
so a test of that generator is not checked against itself.

    ca = TestCA(tmp_path)                       # ca.cert_path
    cert, key = ca.issue("server", ["127.0.0.1", "localhost"])
"""

from __future__ import annotations

import datetime
import ipaddress
import os


class TestCA:
    """A throwaway certificate authority in `directory`."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory, name: str = "memhealth test CA"):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.dir = str(directory)
        os.makedirs(self.dir, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.cert_path = os.path.join(self.dir, "ca.pem")
        with open(self.cert_path, "wb") as fh:
            fh.write(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, hosts: list[str]) -> tuple[str, str]:
        """(certificate path, key path) for a server answering as `hosts` (IPs or DNS names)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        sans = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(self.key, hashes.SHA256()))
        cert_path = os.path.join(self.dir, f"{name}.pem")
        key_path = os.path.join(self.dir, f"{name}.key")
        with open(cert_path, "wb") as fh:
            fh.write(cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
        return cert_path, key_path


def write_secret(path, value: str, mode: int = 0o600) -> str:
    """A secret file with exactly `mode` (umask aside)."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    os.chmod(str(path), mode)
    return str(path)


class Web:
    """How a test reaches a server behind TLS and authentication: trusting `ca`, sending basic
    auth (user, password) or a bearer token.

        web = Web(ca.cert_path, user="memhealth-agent", password=pw)
        with web.urlopen("https://127.0.0.1:9090/-/ready", timeout=2) as resp: ...
    """

    def __init__(self, ca: str, user: str | None = None, password: str | None = None,
                 token: str | None = None):
        import ssl

        self.context = ssl.create_default_context(cafile=ca)
        self.header = None
        if user is not None:
            import base64

            self.header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        elif token is not None:
            self.header = f"Bearer {token}"

    def urlopen(self, req, timeout: float = 5.0):
        import urllib.request

        if isinstance(req, str):
            req = urllib.request.Request(req)
        if self.header:
            req.add_header("Authorization", self.header)
        return urllib.request.urlopen(req, timeout=timeout, context=self.context)


def bcrypt_web_config(path, cert: str, key: str, users: dict[str, str]) -> str:
    """A Prometheus/Alertmanager --web.config.file at `path`: TLS and bcrypt-hashed users."""
    import bcrypt
    import yaml

    doc = {"tls_server_config": {"cert_file": cert, "key_file": key},
           "basic_auth_users": {u: bcrypt.hashpw(p.encode(), bcrypt.gensalt(4)).decode()
                                for u, p in users.items()}}
    return write_secret(path, yaml.safe_dump(doc))
