"""What `memhealth generate --team` writes for the team topology's credentials, proven on real
engines where they run here, and the Collector's TLS and bearer authentication checked by the
schema of its components' configuration (no Collector binary runs here).

- The credentials: a 0700 directory of 0600 files, git-ignored, none of their secrets in a
  committed file; kept on a second run, replaced with --rotate-secrets; the central
  certificate chains to the CA and names every service and the given hosts.
- The web configs: promtool accepts them, and a real Prometheus behind the generated
  prometheus-web.yml lets the generated agent password in, refuses a wrong one and plain HTTP.
"""

from __future__ import annotations

import os
import ssl
import stat
import subprocess
import urllib.error
import urllib.request

import pytest
import yaml

from telemetry.team_secrets import SECRET_FILES, SERVICE_HOSTS
from tests.conftest import REPO, require_binary, run_cli
from tests.support.tls_certs import Web
from tests.telemetry.test_prometheus_e2e import PrometheusProcess

TEAM = os.path.join(REPO, "compose", "team")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("generated")
    proc = run_cli("generate", "--out", str(out), "--team", "search", "--central-host", "10.0.0.5",
                   "--central-host", "metrics.example.com")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, out / "compose" / "team" / "secrets", proc


def secret(directory, name: str) -> str:
    return (directory / name).read_text().strip()


def test_generate_team_writes_every_credential_owner_only_and_prints_none(generated):
    out, secrets, proc = generated
    assert stat.S_IMODE(os.stat(secrets).st_mode) == 0o700
    assert sorted(os.listdir(secrets)) == sorted(SECRET_FILES)
    for name in SECRET_FILES:
        assert stat.S_IMODE(os.stat(secrets / name).st_mode) == 0o600, name
    printed = proc.stdout + proc.stderr
    for name in ("agent.password", "prometheus.password", "alert-budget.token", "collector.token"):
        value = secret(secrets, name)
        assert len(value) >= 40 and value not in printed
        # never inside a generated (committed) file
        for root, _, files in os.walk(out):
            if os.path.abspath(root).startswith(str(secrets)):
                continue
            for f in files:
                assert value not in open(os.path.join(root, f), encoding="utf-8").read(), f
    assert f"{len(SECRET_FILES)} secret file(s) written" in proc.stdout


def test_the_secrets_directory_is_git_ignored_in_the_repository():
    probe = os.path.join("compose", "team", "secrets", "agent.password")
    ignored = subprocess.run(["git", "check-ignore", "-q", probe], cwd=REPO, timeout=30)
    assert ignored.returncode == 0
    kept = subprocess.run(["git", "check-ignore", "-q", os.path.join("compose", "team", "secrets", ".gitignore")],
                          cwd=REPO, timeout=30)
    assert kept.returncode == 1  # the .gitignore itself is committed, so the directory exists


def test_the_central_certificate_chains_to_the_ca_and_names_every_service(generated):
    from cryptography import x509

    _, secrets, _ = generated
    ca = x509.load_pem_x509_certificate((secrets / "ca.pem").read_bytes())
    cert = x509.load_pem_x509_certificate((secrets / "central.pem").read_bytes())
    cert.verify_directly_issued_by(ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = {str(n) for n in sans.get_values_for_type(x509.DNSName)} | {
        str(n) for n in sans.get_values_for_type(x509.IPAddress)}
    assert names == {"10.0.0.5", "metrics.example.com", *SERVICE_HOSTS}
    # what a client does: trust ca.pem, check the name
    ctx = ssl.create_default_context(cafile=str(secrets / "ca.pem"))
    assert ctx.cert_store_stats()["x509_ca"] == 1


def test_a_second_run_keeps_every_credential_and_rotate_replaces_them(tmp_path):
    secrets = tmp_path / "s"
    assert run_cli("generate", "--out", str(tmp_path / "o"), "--secrets-dir", str(secrets)).returncode == 0
    before = {n: (secrets / n).read_bytes() for n in SECRET_FILES}
    again = run_cli("generate", "--out", str(tmp_path / "o"), "--secrets-dir", str(secrets))
    assert again.returncode == 0 and "0 secret file(s) written" in again.stdout
    assert {n: (secrets / n).read_bytes() for n in SECRET_FILES} == before
    # a new host reissues the certificate only
    more = run_cli("generate", "--out", str(tmp_path / "o"), "--secrets-dir", str(secrets),
                   "--central-host", "prom.internal")
    assert more.returncode == 0
    assert (secrets / "central.pem").read_bytes() != before["central.pem"]
    assert (secrets / "agent.password").read_bytes() == before["agent.password"]
    rotated = run_cli("generate", "--out", str(tmp_path / "o"), "--secrets-dir", str(secrets),
                      "--rotate-secrets")
    assert rotated.returncode == 0
    # every credential is new; the pager list is the operator's, not a credential to rotate
    assert all((secrets / n).read_bytes() != before[n] for n in SECRET_FILES if n != "pagers.env")
    assert (secrets / "pagers.env").read_bytes() == before["pagers.env"]


def test_the_generated_web_configs_hold_bcrypt_hashes_of_the_generated_passwords(generated):
    import bcrypt

    _, secrets, _ = generated
    promtool = require_binary("promtool")
    webs = [str(secrets / "prometheus-web.yml"), str(secrets / "alertmanager-web.yml")]
    proc = subprocess.run([promtool, "check", "web-config", *webs], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    prom = yaml.safe_load((secrets / "prometheus-web.yml").read_text())
    users = prom["basic_auth_users"]
    assert bcrypt.checkpw(secret(secrets, "agent.password").encode(), users["memhealth-agent"].encode())
    grafana_pw = dict(line.split("=", 1) for line in secret(secrets, "grafana.env").splitlines()
                      if "=" in line and not line.startswith("#"))
    assert bcrypt.checkpw(grafana_pw["MEMHEALTH_GRAFANA_PROMETHEUS_PASSWORD"].encode(), users["grafana"].encode())
    assert prom["tls_server_config"] == {"cert_file": "central.pem", "key_file": "central.key",
                                         "min_version": "TLS12"}
    am = yaml.safe_load((secrets / "alertmanager-web.yml").read_text())
    assert bcrypt.checkpw(secret(secrets, "prometheus.password").encode(),
                          am["basic_auth_users"]["prometheus"].encode())
    assert "$2" in users["memhealth-agent"] and secret(secrets, "agent.password") not in str(prom)


def test_pager_urls_go_to_the_secrets_dir_and_an_unknown_team_is_refused_before_writing(tmp_path):
    ok = run_cli("generate", "--out", str(tmp_path / "o"), "--team", "search", "--team", "infra",
                 "--pager-url", "search=https://pager.example/search")
    assert ok.returncode == 0, ok.stderr
    env = (tmp_path / "o" / "compose" / "team" / "secrets" / "pagers.env").read_text()
    assert ("MEMHEALTH_ALERTS_ROUTE_WEBHOOKS=search-page=https://pager.example/search,"
            "search-ticket=https://pager.example/search\n") in env
    assert "pager.example" not in (tmp_path / "o" / "compose" / "team" / "alert-budget.env").read_text()
    for bad, why in ((["--pager-url", "web=https://x.example/"], "not one of the teams"),
                     (["--pager-url", "search=ftp://x.example/"], "http(s) URL")):
        proc = run_cli("generate", "--out", str(tmp_path / "fresh"), "--team", "search", *bad)
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr
        assert not (tmp_path / "fresh").exists()  # refused before anything was written


def test_a_real_prometheus_behind_the_generated_web_config_admits_only_the_agent_password(generated, tmp_path):
    _, secrets, _ = generated
    ca = str(secrets / "ca.pem")
    good = Web(ca, user="memhealth-agent", password=secret(secrets, "agent.password"))
    prom = PrometheusProcess(tmp_path, {"global": {"scrape_interval": "15s"}},
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", "--web.enable-remote-write-receiver",
                             f"--web.config.file={secrets / 'prometheus-web.yml'}", web=good)
    try:
        with good.urlopen(prom.url + "/api/v1/query?query=up") as resp:
            assert resp.status == 200
        for bad in (Web(ca, user="memhealth-agent", password="wrong-" + "x" * 40), Web(ca),
                    Web(ca, user="admin", password=secret(secrets, "agent.password"))):
            with pytest.raises(urllib.error.HTTPError) as refused:
                bad.urlopen(prom.url + "/api/v1/write")
            assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as plain:
            urllib.request.urlopen(prom.url.replace("https://", "http://") + "/-/ready", timeout=5)
        assert plain.value.code == 400  # "Client sent an HTTP request to an HTTPS server."
    finally:
        prom.stop()


# -- the Collector: TLS and bearertokenauth on every OTLP receiver ------------------------------

# The keys of the Collector components this config uses, as their Go config structs define them
# (configtls.ServerConfig, configgrpc/confighttp.ServerConfig, configauth.Authentication, the
# bearertokenauth extension's Config; opentelemetry-collector and -contrib v0.111). An unknown
# key makes the Collector refuse to start, so a misspelt `tls:` or `auth:` is an error here too.
TLS_SERVER = {"type": "object", "additionalProperties": False, "required": ["cert_file", "key_file"],
              "properties": {k: {"type": "string"} for k in (
                  "cert_file", "key_file", "ca_file", "client_ca_file", "min_version", "max_version",
                  "reload_interval", "cert_pem", "key_pem", "ca_pem", "client_ca_file_reload")} | {
                  "min_version": {"enum": ["1.2", "1.3"]},
                  "include_system_ca_certs_pool": {"type": "boolean"},
                  "cipher_suites": {"type": "array", "items": {"type": "string"}}}}
AUTH = {"type": "object", "additionalProperties": False, "required": ["authenticator"],
        "properties": {"authenticator": {"type": "string"}}}
PROTOCOL = {"type": "object", "additionalProperties": False, "required": ["endpoint", "tls", "auth"],
            "properties": {"endpoint": {"type": "string"}, "tls": TLS_SERVER, "auth": AUTH,
                           "max_recv_msg_size_mib": {"type": "integer"}, "include_metadata": {"type": "boolean"},
                           "cors": {"type": "object"}, "traces_url_path": {"type": "string"},
                           "keepalive": {"type": "object"}, "transport": {"type": "string"}}}
BEARER = {"type": "object", "additionalProperties": False,
          "properties": {"scheme": {"type": "string"}, "token": {"type": "string"},
                         "filename": {"type": "string"}, "tokens": {"type": "array"},
                         "header": {"type": "string"}},
          "oneOf": [{"required": ["filename"]}, {"required": ["token"]}, {"required": ["tokens"]}]}
COLLECTOR = {
    "type": "object", "required": ["extensions", "receivers", "service"],
    "properties": {
        "extensions": {"type": "object", "required": ["bearertokenauth"],
                       "properties": {"bearertokenauth": BEARER}},
        "receivers": {"type": "object", "additionalProperties": False, "properties": {"otlp": {
            "type": "object", "additionalProperties": False, "required": ["protocols"],
            "properties": {"protocols": {"type": "object", "additionalProperties": False,
                                         "minProperties": 1,
                                         "properties": {"grpc": PROTOCOL, "http": PROTOCOL}}}}}},
        "service": {"type": "object", "required": ["extensions", "pipelines"],
                    "properties": {"extensions": {"type": "array", "items": {"type": "string"}}}},
    }}


def _collector() -> dict:
    with open(os.path.join(TEAM, "otel-collector.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_the_team_collector_config_requires_tls_and_a_bearer_token_on_every_receiver():
    import jsonschema

    config = _collector()
    jsonschema.validate(config, COLLECTOR)
    protocols = config["receivers"]["otlp"]["protocols"]
    assert set(protocols) == {"grpc", "http"}
    for proto in protocols.values():
        # the authenticator is an extension that is declared and started
        assert proto["auth"]["authenticator"] in config["extensions"]
        assert proto["auth"]["authenticator"] in config["service"]["extensions"]
        for key in ("cert_file", "key_file"):
            path = proto["tls"][key]
            assert path.startswith("/etc/otelcol/secrets/") and os.path.basename(path) in SECRET_FILES
    token = config["extensions"]["bearertokenauth"]["filename"]
    assert token == "/etc/otelcol/secrets/collector.token"
    # every pipeline's receivers are the authenticated ones; no metrics path around Prometheus
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces"}
    assert all(set(p["receivers"]) <= set(config["receivers"]) for p in pipelines.values())
    # compose mounts this file and the secrets where the paths say
    with open(os.path.join(TEAM, "docker-compose.yml"), encoding="utf-8") as fh:
        volumes = yaml.safe_load(fh)["services"]["otel-collector"]["volumes"]
    assert "./otel-collector.yaml:/etc/otelcol/config.yaml:ro" in volumes
    assert "./secrets:/etc/otelcol/secrets:ro" in volumes


@pytest.mark.parametrize("break_it", ["no_auth", "no_tls", "misspelt_tls", "plain_only_token"])
def test_the_collector_schema_refuses_a_receiver_left_open(break_it):
    import jsonschema

    config = _collector()
    http = config["receivers"]["otlp"]["protocols"]["http"]
    if break_it == "no_auth":
        del http["auth"]
    elif break_it == "no_tls":
        del http["tls"]
    elif break_it == "misspelt_tls":
        http["tsl"] = http.pop("tls")
    else:
        config["extensions"]["bearertokenauth"] = {"scheme": "Bearer"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, COLLECTOR)


def test_a_bad_route_webhooks_entry_is_said_and_left_out_never_a_crash():
    from telemetry.alert_intake import route_webhooks

    problems: list[str] = []
    got = route_webhooks(["team-a-page=https://pager.example/a", "nonsense", "b-page=ftp://x/",
                          "=https://x.example/"], problems)
    assert got == {"team-a-page": "https://pager.example/a"}
    assert len(problems) == 3 and all("expected ROUTE=https://URL" in p for p in problems)
