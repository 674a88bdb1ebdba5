"""The team topology's credentials: a private CA, the central side's server certificate, one
password or token per network edge, and the web configurations that hold their bcrypt hashes.
Written by `memhealth generate --team` into compose/team/secrets/ (git-ignored, mode 0700,
every file 0600), never into a committed file; the committed configs read them by path.

    written = write_secrets("compose/team/secrets", hosts=("prometheus.example.com",))
    SECRET_FILES["agent.password"]          # what the file is for

An edge, its mechanism, and the files it reads (paths relative to the config that reads them,
which is how Prometheus and Alertmanager resolve them):

    agent → central Prometheus (remote_write)   TLS (ca.pem) + basic auth memhealth-agent / agent.password
    central Prometheus → Alertmanager           TLS (ca.pem) + basic auth prometheus / prometheus.password
    Alertmanager → alert budget (POST /alerts)  TLS (ca.pem) + bearer alert-budget.token
    central Prometheus → alert budget (scrape)  TLS (ca.pem) + bearer alert-budget.token
    Grafana → central Prometheus                TLS (ca.pem) + basic auth grafana / grafana.env
    serve's exporter → Collector (OTLP)         TLS (ca.pem) + bearer collector.token
    a person → Grafana                          TLS + admin password (grafana.env)

Existing files are kept (a second run must not lock every agent out); `rotate=True` makes new
ones. Needs the `team` extra: `cryptography` for the certificates, `bcrypt` for the hashes
(what Prometheus's and Alertmanager's web configuration accept for basic_auth_users).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets

from telemetry.errors import TelemetryError

# the compose service names the central certificate must answer to, and loopback
SERVICE_HOSTS = ("prometheus", "alertmanager", "alert-budget", "otel-collector", "grafana",
                 "localhost", "127.0.0.1")
AGENT_USER = "memhealth-agent"
PROMETHEUS_USER = "prometheus"
GRAFANA_USER = "grafana"
CERT_DAYS = 825  # the longest server-certificate life common clients accept
BCRYPT_COST = 10

SECRET_FILES = {
    "ca.pem": "the team CA's certificate: every client of the central side trusts it (give it to developers)",
    "ca.key": "the team CA's private key: issues the central certificate; keep it off shared hosts",
    "central.pem": "the central side's server certificate (every compose service name, the given hosts)",
    "central.key": "its private key",
    "agent.password": f"remote_write basic-auth password of user {AGENT_USER} (give it to developers)",
    "prometheus.password": f"central Prometheus → Alertmanager basic-auth password of user {PROMETHEUS_USER}",
    "alert-budget.token": "bearer token of the alert budget serve (Alertmanager's webhooks, Prometheus's scrape)",
    "collector.token": "bearer token of the Collector's OTLP receivers (give it to developers)",
    "grafana.env": f"Grafana's admin password and its {GRAFANA_USER} password to the central Prometheus",
    "prometheus-web.yml": "the central Prometheus's --web.config.file: TLS and bcrypt-hashed users",
    "alertmanager-web.yml": "the central Alertmanager's --web.config.file: TLS and the bcrypt-hashed user",
    "pagers.env": "each team's pager URL for the alert budget (MEMHEALTH_ALERTS_ROUTE_WEBHOOKS; "
                  "webhook URLs are credentials too)",
}


class SecretsError(TelemetryError):
    """The credentials cannot be written (the `team` extra missing, a file in the way)."""

    reason = "secrets"
    exit_code = 2


def _write(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _password() -> str:
    return secrets.token_urlsafe(32)  # 43 characters, 256 bits


def _bcrypt(password: str) -> str:
    try:
        import bcrypt
    except ImportError:
        raise SecretsError("the web configurations need bcrypt: pip install 'memhealth[team]'") from None
    return bcrypt.hashpw(password.encode("ascii"), bcrypt.gensalt(BCRYPT_COST)).decode("ascii")


def _crypto():
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise SecretsError("the certificates need cryptography: pip install 'memhealth[team]'") from None
    return x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID


def _key_pem(key) -> bytes:
    _, _, serialization, *_ = _crypto()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(name: str = "memhealth team CA"):
    """(certificate, key) of a new CA (ECDSA P-256)."""
    x509, hashes, _, ec, _, NameOID = _crypto()
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def issue(ca_cert, ca_key, hosts: tuple[str, ...]):
    """(certificate, key) of a server certificate for `hosts` (DNS names or IP literals)."""
    x509, hashes, _, ec, ExtendedKeyUsageOID, NameOID = _crypto()
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
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def web_config(users: dict[str, str], cert_file: str = "central.pem",
               key_file: str = "central.key") -> str:
    """A Prometheus/Alertmanager --web.config.file: TLS 1.2+ and basic auth, each password
    kept only as its bcrypt hash. Paths are relative to the web config file."""
    import yaml

    doc = {"tls_server_config": {"cert_file": cert_file, "key_file": key_file, "min_version": "TLS12"},
           "basic_auth_users": {user: _bcrypt(pw) for user, pw in sorted(users.items())}}
    return ("# Generated by `memhealth generate --team`: secret (bcrypt hashes); never commit.\n"
            + yaml.safe_dump(doc, sort_keys=False))


def pagers_env(pagers: dict[str, str]) -> str:
    """The alert budget's per-route pager URLs: each team's page and ticket routes to its URL
    (pages and digests; a route without one uses MEMHEALTH_ALERTS_WEBHOOK_URL)."""
    entries = [f"{team}-{kind}={url}" for team, url in sorted(pagers.items()) for kind in ("page", "ticket")]
    return ("# Generated by `memhealth generate --team … --pager-url TEAM=URL`: never commit.\n"
            f"MEMHEALTH_ALERTS_ROUTE_WEBHOOKS={','.join(entries)}\n")


def write_secrets(directory: str, hosts: tuple[str, ...] = (), rotate: bool = False,
                  pagers: dict[str, str] | None = None) -> list[str]:
    """Create what is missing in `directory` (all of it with rotate=True); the file names
    written, in SECRET_FILES order. A server certificate is reissued when `hosts` asks for a
    name it lacks; pagers.env is rewritten when `pagers` is given (else kept, or written empty)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)

    def path(name: str) -> str:
        return os.path.join(directory, name)

    def missing(name: str) -> bool:
        return rotate or not os.path.exists(path(name))

    written: list[str] = []
    x509, _, serialization, *_ = _crypto()
    pem = serialization.Encoding.PEM
    if missing("ca.pem") or missing("ca.key"):
        ca_cert, ca_key = make_ca()
        _write(path("ca.pem"), ca_cert.public_bytes(pem))
        _write(path("ca.key"), _key_pem(ca_key))
        written += ["ca.pem", "ca.key"]
    else:
        ca_cert = x509.load_pem_x509_certificate(_read(path("ca.pem")))
        ca_key = serialization.load_pem_private_key(_read(path("ca.key")), password=None)
    wanted = tuple(dict.fromkeys((*hosts, *SERVICE_HOSTS)))
    reissue = "ca.pem" in written or missing("central.pem") or missing("central.key")
    if not reissue:
        have = x509.load_pem_x509_certificate(_read(path("central.pem")))
        names = have.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        present = {str(n) for n in names.get_values_for_type(x509.DNSName)} | {
            str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
        reissue = not set(wanted) <= present
    if reissue:
        cert, key = issue(ca_cert, ca_key, wanted)
        _write(path("central.pem"), cert.public_bytes(pem))
        _write(path("central.key"), _key_pem(key))
        written += ["central.pem", "central.key"]
    for name in ("agent.password", "prometheus.password", "alert-budget.token", "collector.token"):
        if missing(name):
            _write(path(name), (_password() + "\n").encode())
            written.append(name)
    if missing("grafana.env"):
        _write(path("grafana.env"), (
            "# Generated by `memhealth generate --team`: Grafana's secrets (compose env_file).\n"
            f"GF_SECURITY_ADMIN_PASSWORD={_password()}\n"
            f"MEMHEALTH_GRAFANA_PROMETHEUS_PASSWORD={_password()}\n").encode())
        written.append("grafana.env")

    def secret(name: str) -> str:
        return _read(path(name)).decode().strip()

    def grafana_password() -> str:
        for line in secret("grafana.env").splitlines():
            if line.startswith("MEMHEALTH_GRAFANA_PROMETHEUS_PASSWORD="):
                return line.split("=", 1)[1]
        raise SecretsError(f"{path('grafana.env')}: no MEMHEALTH_GRAFANA_PROMETHEUS_PASSWORD line")

    changed = bool(written)
    if changed or missing("prometheus-web.yml"):
        _write(path("prometheus-web.yml"), web_config(
            {AGENT_USER: secret("agent.password"), GRAFANA_USER: grafana_password()}).encode())
        written.append("prometheus-web.yml")
    if changed or missing("alertmanager-web.yml"):
        _write(path("alertmanager-web.yml"), web_config(
            {PROMETHEUS_USER: secret("prometheus.password")}).encode())
        written.append("alertmanager-web.yml")
    if pagers is not None or missing("pagers.env"):
        new = pagers_env(pagers or {}).encode()
        if not os.path.exists(path("pagers.env")) or _read(path("pagers.env")) != new:
            _write(path("pagers.env"), new)
            written.append("pagers.env")
    return [n for n in SECRET_FILES if n in written]
