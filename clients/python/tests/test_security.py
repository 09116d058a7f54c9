"""The security options without a network: loading them from files, and the combinations the
client refuses before it dials (test_tls.py runs them against a real pserver)."""

import pytest

import pserver_client
from pserver_client import ClientError, PserverError, TlsOptions, is_refused, is_retryable, is_stale, load_security
from pserver_client.security import ChannelFactory


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_load_security_reads_every_file(tmp_path):
    security = load_security(
        ca_file=write(tmp_path, "ca.pem", "CA PEM"),
        cert_file=write(tmp_path, "c.pem", "CERT PEM"),
        key_file=write(tmp_path, "c.key", "KEY PEM"),
        token_file=write(tmp_path, "t", "  0123456789abcdef0123\n"),
        server_name="pserver-0.ml.svc",
    )
    assert security == {
        "tls": TlsOptions(ca=b"CA PEM", cert=b"CERT PEM", key=b"KEY PEM", server_name="pserver-0.ml.svc"),
        "token": "0123456789abcdef0123",
    }


def test_load_security_gives_only_what_was_named(tmp_path):
    assert load_security() == {}
    assert load_security(token_file=write(tmp_path, "t", "0123456789abcdef")) == {"token": "0123456789abcdef"}
    assert load_security(server_name="x") == {"tls": TlsOptions(server_name="x")}


def test_a_missing_file_is_named(tmp_path):
    missing = str(tmp_path / "nope.pem")
    with pytest.raises(ClientError) as raised:
        load_security(ca_file=missing)
    assert raised.value.code == "CLIENT_INVALID_SECURITY"
    assert missing in str(raised.value)


@pytest.mark.parametrize(
    "tls, token",
    [
        (None, "0123456789abcdef"),  # a token in plaintext
        (TlsOptions(cert=b"CERT PEM"), None),  # a certificate without its key
        (TlsOptions(key=b"KEY PEM"), None),
        (TlsOptions(), "   "),  # an empty token
        (TlsOptions(), "two words"),
        ({"ca": b"CA PEM"}, None),  # not a TlsOptions
    ],
)
def test_options_that_cannot_work_are_refused(tls, token):
    with pytest.raises(ClientError) as raised:
        ChannelFactory(tls, token)
    assert raised.value.code == "CLIENT_INVALID_SECURITY"


def test_connect_refuses_a_token_without_tls_before_dialling():
    # Standalone, connect tolerates a pserver that is not up yet (nothing listens on port 1):
    # without the check it would return a client.
    with pytest.raises(ClientError) as raised:
        pserver_client.connect(pservers=["127.0.0.1:1"], token="0123456789abcdef")
    assert raised.value.code == "CLIENT_INVALID_SECURITY"


def test_the_key_stays_out_of_repr():
    assert "SECRET" not in repr(TlsOptions(cert=b"CERT", key=b"SECRET"))


def test_tls_options_make_a_secure_factory():
    assert ChannelFactory(TlsOptions(), "0123456789abcdef").secure
    assert not ChannelFactory().secure


def test_refusals_are_final():
    for status, code in (("UNAUTHENTICATED", "AUTH_UNAUTHENTICATED"), ("PERMISSION_DENIED", "AUTH_PERMISSION_DENIED")):
        err = PserverError(status, "refused", code=code)
        assert is_refused(err)
        assert not is_retryable(err) and not is_stale(err)
    assert not is_refused(PserverError("UNAVAILABLE", "connection refused"))
    assert not is_refused(ClientError("CLIENT_INVALID_SECURITY", "x"))
