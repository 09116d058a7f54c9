"""TLS, client certificates and bearer tokens against one real pserver serving mutual TLS with
an --auth-config (certificates with OU trainers are trainers, OU admins admins, one token a
trainer). Every test but the first uses its own client; the pserver is shared by the module."""

import os

import numpy as np
import pytest

import pserver_client
from pserver_client import ClientError, PserverError, TlsOptions, load_security, open_channel
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from pserver_client._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc
from pserver_client.errors import call
from conftest import Certificates, Pserver

pytestmark = pytest.mark.integration

SGD = {"sgd": {}, "learning_rate": {"base": 1}}
GRAD = np.array([1, 2, 3, 4], np.float32)


class Secure:
    def __init__(self, certs, server):
        self.certs = certs
        self.checkpoint_dir = server.checkpoint_dir
        port = server.port
        #: The certificate names localhost: no server_name needed.
        self.by_name = f"localhost:{port}"
        #: The certificate does not name 127.0.0.1: TLS needs server_name="pserver.test".
        self.by_ip = f"127.0.0.1:{port}"

    def tls(self, client=None, server_name=None):
        """TlsOptions with the test CA and, given "trainer" or "admin", that client certificate."""
        c = self.certs
        return TlsOptions(
            ca=c.read("ca.pem"),
            cert=c.read(f"{client}.pem") if client else None,
            key=c.read(f"{client}.key") if client else None,
            server_name=server_name,
        )


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    """The module's pserver, with the model ("w", four zeros, SGD at rate 1) initialized by a
    trainer certificate; stopped after the module's last test."""
    directory = tmp_path_factory.mktemp("tls")
    certs = Certificates(directory)
    server = Pserver(certs.server_args(), str(directory))
    try:
        s = Secure(certs, server)
        with pserver_client.connect(pservers=[s.by_name], tls=s.tls("trainer"), call_timeout_s=10) as client:
            client.init_params({"w": np.zeros(4, np.float32)}, SGD)
        yield s
    finally:
        server.stop()


def push_and_pull(client):
    """One step's push, with pulls around it: the pserver applied it (w -= 1 * GRAD)."""
    client.init_params({"w": np.zeros(4, np.float32)}, SGD)  # declares the model; another wrote it
    before = client.get_params(["w"])["w"]
    client.step(lambda ctx: ctx.send_grads({"w": GRAD}))
    after = client.get_params(["w"])["w"]
    np.testing.assert_array_equal(after, before - GRAD)


def refusal(fn):
    with pytest.raises(PserverError) as raised:
        fn()
    return raised.value


def test_a_trainer_certificate_pushes_and_pulls(secure):
    with pserver_client.connect(
        pservers=[secure.by_name], tls=secure.tls("trainer"), initializer=False, name="cert"
    ) as client:
        push_and_pull(client)


def test_a_trainer_token_over_tls_pushes_and_pulls(secure):
    c = secure.certs
    security = load_security(ca_file=c.path("ca.pem"), token_file=c.token_file, server_name=Certificates.SERVER_NAME)
    assert security["tls"].cert is None  # no client certificate: the token alone gets in
    with pserver_client.connect(pservers=[secure.by_ip], initializer=False, name="token", **security) as client:
        push_and_pull(client)


def test_the_server_name_is_what_the_certificate_is_checked_against(secure):
    # Dialled by IP, which the certificate does not name: the handshake fails...
    without = open_channel(secure.by_ip, tls=secure.tls("trainer"))
    try:
        err = refusal(lambda: call(ps_grpc.ParameterServerStub(without).GetShardStatus, ps_pb2.GetShardStatusRequest(), timeout=10))
        assert err.status == "UNAVAILABLE"
    finally:
        without.close()
    # ...and the same dial with server_name gets an answer.
    named = open_channel(secure.by_ip, tls=secure.tls("trainer", server_name=Certificates.SERVER_NAME))
    try:
        status = call(ps_grpc.ParameterServerStub(named).GetShardStatus, ps_pb2.GetShardStatusRequest(), timeout=10)
        assert status.shard_epoch > 0
    finally:
        named.close()


def test_a_wrong_token_is_refused_unauthenticated(secure):
    err = refusal(
        lambda: pserver_client.connect(pservers=[secure.by_name], tls=secure.tls(), token="0" * 64, call_timeout_s=10)
    )
    assert (err.status, err.code) == ("UNAUTHENTICATED", "AUTH_UNAUTHENTICATED")


def test_a_call_without_credentials_is_refused_unauthenticated(secure):
    err = refusal(lambda: pserver_client.connect(pservers=[secure.by_name], tls=secure.tls(), call_timeout_s=10))
    assert (err.status, err.code) == ("UNAUTHENTICATED", "AUTH_UNAUTHENTICATED")


def test_a_certificate_of_another_ca_is_refused_unauthenticated(secure):
    cert, key = secure.certs.outsider
    with open(cert, "rb") as f1, open(key, "rb") as f2:
        tls = TlsOptions(ca=secure.certs.read("ca.pem"), cert=f1.read(), key=f2.read())
    err = refusal(lambda: pserver_client.connect(pservers=[secure.by_name], tls=tls, call_timeout_s=10))
    assert (err.status, err.code) == ("UNAUTHENTICATED", "AUTH_UNAUTHENTICATED")


def test_only_an_admin_may_save_a_checkpoint(secure):
    def save(client):
        channel = open_channel(secure.by_name, tls=secure.tls(client))
        try:
            return call(ps_grpc.ParameterServerStub(channel).SaveCheckpoint, ps_pb2.SaveCheckpointRequest(), timeout=30)
        finally:
            channel.close()

    err = refusal(lambda: save("trainer"))
    assert (err.status, err.code) == ("PERMISSION_DENIED", "AUTH_PERMISSION_DENIED")
    saved = save("admin").meta
    assert os.path.getsize(os.path.join(secure.checkpoint_dir, saved.path)) == saved.size > 0


def test_a_token_without_tls_is_refused_before_dialling(secure):
    with open(secure.certs.token_file, encoding="utf-8") as f:
        token = f.read().strip()
    for where in ({"pservers": [secure.by_name]}, {"master": [secure.by_name]}):
        with pytest.raises(ClientError) as raised:
            pserver_client.connect(token=token, **where)
        assert raised.value.code == "CLIENT_INVALID_SECURITY"
