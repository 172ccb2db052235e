"""P4Runtime over TLS, with a CA made at test time: the controller (replayctl)
manages both switches over TLS, with and without client certificates, and
plain text, a foreign CA or a missing client certificate get nowhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agent.contract.cli_args import REPO
from bmv2.launch import ServerTls, SwitchProcess
from controller import cli
from controller import config as cfgmod
from tests import needs
from tests.dataplane.packets import CONFIG

SERVER_NAME = "p4switch.test"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _issue(d: Path, ca: str, name: str, san: str) -> None:
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem",
             cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a switch certificate (127.0.0.1 and SERVER_NAME), a controller
    certificate from the same CA, and a second CA that signed neither."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("pki")
    _make_ca(d, "ca")
    _make_ca(d, "other-ca")
    _issue(d, "ca", "switch", f"IP:127.0.0.1,DNS:{SERVER_NAME}")
    _issue(d, "ca", "controller", "DNS:controller.test")
    _issue(d, "other-ca", "intruder", "DNS:intruder.test")
    return d


def _switch(kind: str, pki: Path, tmp: Path, client_auth: bool) -> Iterator[SwitchProcess]:
    needs.switch(kind)
    tls = ServerTls(pki / "switch.pem", pki / "switch.key", pki / "ca.pem", client_auth)
    with SwitchProcess(kind, {}, log_path=tmp / f"switch-{kind}.log", tls=tls) as switch:
        yield switch


@pytest.fixture(params=["python", "bmv2"])
def tls_switch(request: pytest.FixtureRequest, pki: Path, tmp_path: Path):
    """A switch that serves P4Runtime over TLS only (no client certificate needed)."""
    yield from _switch(request.param, pki, tmp_path, client_auth=False)


@pytest.fixture(params=["python", "bmv2"])
def mtls_switch(request: pytest.FixtureRequest, pki: Path, tmp_path: Path):
    """A switch that requires a client certificate signed by the CA."""
    yield from _switch(request.param, pki, tmp_path, client_auth=True)


def _config(tmp: Path, switch: SwitchProcess, tls: dict | None) -> str:
    doc = yaml.safe_load(CONFIG.read_text())
    doc["switch"] = {"address": switch.grpc_addr, **({"tls": tls} if tls else {})}
    path = tmp / f"switch-{len(list(tmp.glob('switch-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _ctl(capsys: pytest.CaptureFixture, cfg: str, *args: str) -> tuple[int, str]:
    code = cli.main(["-c", cfg, "--timeout", "3", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_replayctl_deploys_over_tls(tls_switch: SwitchProcess, pki: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture) -> None:
    cfg = _config(tmp_path, tls_switch, {"ca_cert": str(pki / "ca.pem")})
    code, out = _ctl(capsys, cfg, "deploy")
    assert code == 0 and "pipeline pushed" in out, out
    code, out = _ctl(capsys, cfg, "status")
    assert code == 0 and "pipeline loaded" in out, out
    # The name in the switch's certificate, when it is not the address's host.
    named = _config(tmp_path, tls_switch, {"ca_cert": str(pki / "ca.pem"),
                                           "server_name": SERVER_NAME})
    assert _ctl(capsys, named, "status")[0] == 0


def test_plain_text_and_a_foreign_ca_get_nowhere(tls_switch: SwitchProcess, pki: Path,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    for tls in (None, {"ca_cert": str(pki / "other-ca.pem")},
                {"ca_cert": str(pki / "ca.pem"), "server_name": "someone.else"}):
        code, out = _ctl(capsys, _config(tmp_path, tls_switch, tls), "status")
        assert code == cli.EXIT_UNREACHABLE, (tls, out)
        assert out.strip().count("\n") == 0 and "switch unreachable" in out


def test_client_certificates_when_the_switch_requires_them(mtls_switch: SwitchProcess,
                                                           pki: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    ca = str(pki / "ca.pem")
    good = {"ca_cert": ca, "cert": str(pki / "controller.pem"), "key": str(pki / "controller.key")}
    code, out = _ctl(capsys, _config(tmp_path, mtls_switch, good), "deploy")
    assert code == 0 and "pipeline pushed" in out, out
    intruder = {"ca_cert": ca, "cert": str(pki / "intruder.pem"),
                "key": str(pki / "intruder.key")}
    for tls in ({"ca_cert": ca}, intruder):
        code, out = _ctl(capsys, _config(tmp_path, mtls_switch, tls), "status")
        assert code == cli.EXIT_UNREACHABLE, (tls, out)


def test_tls_config_errors_name_the_line(pki: Path, tmp_path: Path) -> None:
    doc = yaml.safe_load(CONFIG.read_text())
    for tls, message in (({"cert": "x.pem"}, "missing field 'ca_cert'"),
                         ({"ca_cert": "ca.pem", "cert": "controller.pem"}, "both cert and key"),
                         ({"ca_cert": "nope.pem"}, "cannot read"),
                         ({"ca_cert": "ca.pem", "pin": 1}, "unknown field")):
        doc["switch"] = {"tls": tls}
        path = pki / "bad.yaml"  # relative paths are the config file's directory's
        path.write_text(yaml.safe_dump(doc))
        with pytest.raises(cfgmod.ConfigError, match=message) as err:
            cfgmod.load(path)
        assert str(err.value).startswith(f"{path}:")
    doc["switch"] = {"tls": {"ca_cert": "ca.pem", "cert": "controller.pem",
                             "key": "controller.key"}}
    (pki / "good.yaml").write_text(yaml.safe_dump(doc))
    tls = cfgmod.load(pki / "good.yaml").switch.tls
    assert tls is not None and tls.ca_cert == str(pki / "ca.pem")
    assert tls.key == str(pki / "controller.key")


@pytest.mark.parametrize("argv, message", [
    (["--grpc-server-ssl"], "needs --grpc-server-cert and --grpc-server-key"),
    (["--grpc-server-with-client-auth"], "needs --grpc-server-ssl"),
    (["--grpc-server-ssl", "--grpc-server-cert", "nope.pem", "--grpc-server-key", "nope.key"],
     "cannot read nope"),
])
def test_python_switch_tls_flags_are_checked(argv: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "bmv2.pyswitch", "--no-p4", "--",
                           "--grpc-server-addr", "127.0.0.1:0", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr, proc.stderr
