"""Planted secrets: fake values in the real shapes of cloud keys, tokens and passwords.

Every value is made up for these tests (none is a live credential). Tests plant
them in environment variables, command lines, logs, records, stacks and dumps,
and assert that none of ``SECRETS`` survives anywhere in a report or bundle.
"""

from __future__ import annotations

AWS_KEY_ID = "AKIAQ7PLANTEDKEY0042"
AWS_SESSION_KEY_ID = "ASIAZ9PLANTEDKEY0077"
AWS_SECRET = "pLaNtEd/k7MDENG+bPxRfiCYPLANTEDSECRETKY"
HF_TOKEN = "hf_PlantedHuggingFaceTokenAbcdEFGH1234"
WANDB_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
GITHUB_TOKEN = "ghp_PlantedGithubToken0123456789abcdefXY"
SLACK_TOKEN = "xoxb-1234567890-PlantedSlackToken-abcdef"
BEARER = "PlantedBearerToken.Zm9vYmFyYmF6cXV4.signature42"
URL_PASSWORD = "Pl4nted-Url-Passw0rd"
PROXY_PASSWORD = "Pr0xyPl4ntedSecret"
DB_PASSWORD = "DbPl4ntedPassword99"
OPENAI_KEY = "sk-proj-PlantedOpenAiKey0123456789abcdefgh"
PEM_BODY = [
    "MIIEpQIBAAKCAQEAzPlantedPrivateKeyLine1AbCdEfGhIjKlMnOpQrStUvWx",
    "yZ0123456789PlantedPrivateKeyLine2abcdefghijklmnopqrstuvwxyzAB",
    "CDEFGHIJKLMNOPlantedPrivateKeyLine3QRSTUVWXYZ0123456789abcdefgh",
    "PlantedLastLine4==",
]
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"

SECRETS = [AWS_KEY_ID, AWS_SESSION_KEY_ID, AWS_SECRET, HF_TOKEN, WANDB_KEY, GITHUB_TOKEN, SLACK_TOKEN, BEARER,
           URL_PASSWORD, PROXY_PASSWORD, DB_PASSWORD, OPENAI_KEY, *PEM_BODY]

#: Environment variables for the CLI under test (values hold every kind of secret).
ENV = {
    "AWS_ACCESS_KEY_ID": AWS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "AWS_SESSION_TOKEN": AWS_SESSION_KEY_ID,
    "HF_TOKEN": HF_TOKEN,
    "WANDB_API_KEY": WANDB_KEY,
    "GITHUB_TOKEN": GITHUB_TOKEN,
    "SLACK_BOT": SLACK_TOKEN,
    "DB_PASSWORD": DB_PASSWORD,
    "OPENAI_API_KEY": OPENAI_KEY,
    "SSH_PRIVATE_KEY": PRIVATE_KEY,
    "MY_CERT_PEM": PRIVATE_KEY,  # a name that does not say "secret": the value must be caught by its shape
    "https_proxy": f"http://alice:{PROXY_PASSWORD}@proxy.corp.example:3128",
    "COMMDOCTOR_NOTE": f"Authorization: Bearer {BEARER}",
    "NCCL_DEBUG": "INFO",
}

#: A job's command line carrying secrets as flags and URLs.
CMDLINE = (f"torchrun --nnodes 2 train.py --hf_token {HF_TOKEN} --wandb-key {WANDB_KEY} "
           f"--db postgres://trainer:{URL_PASSWORD}@db.internal:5432/runs --openai {OPENAI_KEY} "
           f"--header 'Authorization: Bearer {BEARER}'")


def log_lines() -> list[str]:
    """Log lines with secrets next to the errors a report keeps windows around."""
    return [
        f"[rank0]: using token {HF_TOKEN} for the hub",
        f"[rank0]: export AWS_ACCESS_KEY_ID={AWS_KEY_ID} aws_secret_access_key={AWS_SECRET}",
        f"[rank1]: wandb: logging in with key {WANDB_KEY}",
        f"[rank1]: cloning https://x-access-token:{GITHUB_TOKEN}@github.com/org/repo.git",
        f"[rank1]: GET https://api.example.com/v1 -H 'Authorization: Bearer {BEARER}'",
        f"[rank0]: slack notify {SLACK_TOKEN}",
        f"[rank0]: connecting to postgres://trainer:{URL_PASSWORD}@db.internal/runs password={DB_PASSWORD}",
        "[rank0]: loaded key:",
        "-----BEGIN RSA PRIVATE KEY-----",
        *PEM_BODY,
        "-----END RSA PRIVATE KEY-----",
    ]


# -- the planted-secret corpus: one line per shape a user pastes ------------------------------
#
# Each entry: (shape, line as it appears in a log, a command line or a config dump, the secret in
# it). The secret must not survive anywhere in a report or bundle; the rest of the line may.
# Values are random-looking and made up for these tests.

def _v(seed: str, n: int = 24, alphabet: str = "AbCdEfGhJkMnPqRsTuVwXyZ23456789") -> str:
    """A deterministic random-looking value (mixed case and digits), distinct per seed."""
    import hashlib

    out, h = "", hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        for b in h:
            out += alphabet[b % len(alphabet)]
        h = hashlib.sha256(h).digest()
    return out[:n]


def _hex(seed: str, n: int = 40) -> str:
    return _v(seed, n, "0123456789abcdef")


def _shapes() -> list[tuple[str, str, str]]:
    s: list[tuple[str, str, str]] = []

    def add(shape: str, line: str, secret: str) -> None:
        assert secret in line, shape
        s.append((shape, line, secret))

    # Cloud keys and vendor tokens, by their own shape.
    add("aws-key-id", "export AWS_ACCESS_KEY_ID=AKIAZ3PLANTEDID77QQX", "AKIAZ3PLANTEDID77QQX")
    add("aws-key-id-bare", "using credentials ASIAQ4PLANTEDID88RRY from the instance", "ASIAQ4PLANTEDID88RRY")
    add("aws-secret-env", f"AWS_SECRET_ACCESS_KEY={_v('aws1', 40)}", _v("aws1", 40))
    add("aws-secret-lower", f"aws_secret_access_key = {_v('aws2', 40)}", _v("aws2", 40))
    add("aws-secret-after-word", f"aws secret {_v('aws3', 40)}", _v("aws3", 40))
    add("aws-secret-json", f'{{"SecretAccessKey": "{_v("aws4", 40)}", "AccessKeyId": "AKIAZ3PLANTEDID78QQX"}}', _v("aws4", 40))
    add("aws-session-token", f"AWS_SESSION_TOKEN={_v('aws5', 120)}", _v("aws5", 120))
    add("aws-presigned-url", f"GET https://b.s3.amazonaws.com/o?X-Amz-Credential=AKIAZ3PLANTEDID79QQX%2F2026&X-Amz-Signature={_hex('sig1', 64)}", _hex("sig1", 64))
    add("gcs-signed-url", f"https://storage.googleapis.com/b/o?X-Goog-Signature={_hex('sig2', 64)}&x=1", _hex("sig2", 64))
    add("azure-conn-string", f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={_v('az1', 86)}==;EndpointSuffix=core.windows.net", _v("az1", 86))
    add("azure-sas", f"https://acct.blob.core.windows.net/c?sv=2022-11-02&sig={_v('az2', 43)}%3D", _v("az2", 43))
    add("azure-shared-access-key", f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={_v('az3', 43)}=", _v("az3", 43))
    add("gcp-api-key", "maps key AIzaSyPl4nted0123456789abcdefghijklmnop", "AIzaSyPl4nted0123456789abcdefghijklmnop")
    add("gcp-oauth", f"token ya29.{_v('g1', 60)}", _v("g1", 60))
    add("gcp-sa-private-key-id", f'"private_key_id": "{_hex("g2", 40)}",', _hex("g2", 40))
    add("hf-token", f"huggingface-cli login --token hf_{_v('hf1', 34)}", f"hf_{_v('hf1', 34)}")
    add("hf-token-env-lower", f"hf_token={_v('hf2', 34)}", _v("hf2", 34))
    add("github-pat", f"git push https://ghp_{_v('gh1', 36)}@github.com/o/r", f"ghp_{_v('gh1', 36)}")
    add("github-fine-pat", f"GH_TOKEN=github_pat_{_v('gh2', 30)}_{_v('gh3', 40)}", f"github_pat_{_v('gh2', 30)}")
    add("github-oauth", f"gho_{_v('gh4', 36)} used", f"gho_{_v('gh4', 36)}")
    add("gitlab-pat", f"glpat-{_v('gl1', 20)} for CI", f"glpat-{_v('gl1', 20)}")
    add("slack-bot", f"notify xoxb-{_v('sl1', 30)}", f"xoxb-{_v('sl1', 30)}")
    add("slack-webhook", f"POST https://hooks.slack.com/services/T0000/B0000/{_v('sl2', 24)}", _v("sl2", 24))
    add("openai", f"OPENAI_API_KEY=sk-proj-{_v('oa1', 40)}", f"sk-proj-{_v('oa1', 40)}")
    add("openai-bare", f"client = OpenAI(api_key='sk-{_v('oa2', 40)}')", _v("oa2", 40))
    add("anthropic", f"key sk-ant-api03-{_v('an1', 50)}", _v("an1", 50))
    add("stripe-live", f"charge with sk_live_{_v('st1', 24)}", f"sk_live_{_v('st1', 24)}")
    add("stripe-restricted", f"rk_live_{_v('st2', 24)}", f"rk_live_{_v('st2', 24)}")
    add("sendgrid", f"SG.{_v('sg1', 22)}.{_v('sg2', 43)}", _v("sg2", 43))
    add("npm", f"//registry.npmjs.org/:_authToken=npm_{_v('np1', 36)}", f"npm_{_v('np1', 36)}")
    add("pypi", f"password = pypi-AgEIcHlwaS5vcmc{_v('pp1', 60)}", _v("pp1", 60))
    add("docker-pat", f"docker login -u me -p dckr_pat_{_v('dk1', 27)}", f"dckr_pat_{_v('dk1', 27)}")
    add("databricks", f"DATABRICKS_HOST=x dapi{_hex('db1', 32)}", f"dapi{_hex('db1', 32)}")
    add("wandb-hex", f"wandb login {_hex('wb1', 40)}", _hex("wb1", 40))
    add("wandb-env", f"WANDB_API_KEY={_hex('wb2', 40)}", _hex("wb2", 40))
    add("wandb-flag-nonhex", f"train.py --wandb-key {_v('wb3', 32)}", _v("wb3", 32))
    add("wandb-flag-eq", f"train.py --wandb_key={_v('wb4', 32)}", _v("wb4", 32))
    add("jwt", f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{_v('jw1', 20)}.{_v('jw2', 43)}", _v("jw2", 43))
    add("grafana", f"glsa_{_v('gf1', 32)}_{_hex('gf2', 8)}", f"glsa_{_v('gf1', 32)}")
    # Environment-variable assignments, in every case.
    add("env-token-upper", f"MY_SERVICE_TOKEN={_v('e1')}", _v("e1"))
    add("env-token-lower", f"my_token={_v('e2')}", _v("e2"))
    add("env-token-mixed", f"My_Token={_v('e3')}", _v("e3"))
    add("env-password", f"DB_PASSWORD={_v('e4')}", _v("e4"))
    add("env-passwd", f"LDAP_PASSWD={_v('e5')}", _v("e5"))
    add("env-pwd", f"MYSQL_ROOT_PWD={_v('e6')}", _v("e6"))
    add("env-pass-suffix", f"SMTP_PASS={_v('e7')}", _v("e7"))
    add("env-key-suffix", f"DEPLOY_KEY={_v('e8')}", _v("e8"))
    add("env-auth-suffix", f"REGISTRY_AUTH={_v('e9')}", _v("e9"))
    add("env-secret", f"CLIENT_SECRET={_v('e10')}", _v("e10"))
    add("env-credentials", f"GOOGLE_CREDENTIALS={_v('e11')}", _v("e11"))
    add("env-export-quoted", f'export API_KEY="{_v("e12")}"', _v("e12"))
    add("env-spaces", f"api_key : {_v('e13')}", _v("e13"))
    add("env-session-key", f"SESSION_KEY={_v('e14')}", _v("e14"))
    add("env-private-key-inline", f"PRIVATE_KEY={_v('e15')}", _v("e15"))
    add("env-sas-token", f"AZURE_SAS_TOKEN={_v('e16')}", _v("e16"))
    add("env-accountkey", f"AZURE_STORAGE_ACCOUNT_KEY={_v('e17')}", _v("e17"))
    add("yaml-password", f"  password: {_v('y1')}", _v("y1"))
    add("yaml-token", f"  auth_token: '{_v('y2')}'", _v("y2"))
    add("json-password", f'{{"user": "svc", "password": "{_v("j1")}"}}', _v("j1"))
    add("json-secret", f'"client_secret":"{_v("j2")}"', _v("j2"))
    add("ini-password", f"password={_v('i1')}", _v("i1"))
    add("toml-token", f'token = "{_v("t1")}"', _v("t1"))
    add("dotenv-apikey", f"OPENWEATHER_APIKEY={_v('d1')}", _v("d1"))
    # Flags on command lines.
    add("flag-token", f"python train.py --hf_token {_v('f1')}", _v("f1"))
    add("flag-token-eq", f"python train.py --hub-token={_v('f2')}", _v("f2"))
    add("flag-password", f"psql --password {_v('f3')}", _v("f3"))
    add("flag-api-key", f"run --api-key {_v('f4')}", _v("f4"))
    add("flag-secret", f"vault write --client-secret {_v('f5')}", _v("f5"))
    add("flag-deploy-key", f"deploy --deploy-key {_v('f6')}", _v("f6"))
    add("mysql-p", f"mysql -u root -p{_v('m1', 14)} -h db", _v("m1", 14))
    add("mysqldump-p", f"mysqldump -uroot -p{_v('m2', 14)} db", _v("m2", 14))
    add("mysql-password-eq", f"mysql --password={_v('m3', 14)} db", _v("m3", 14))
    add("sshpass", f"sshpass -p {_v('m4', 14)} ssh node2", _v("m4", 14))
    add("curl-u", f"curl -u alice:{_v('c1', 14)} https://api.example.com", _v("c1", 14))
    add("curl-user", f"curl --user bob:{_v('c2', 14)} https://api.example.com", _v("c2", 14))
    add("curl-proxy-user", f"curl --proxy-user carol:{_v('c3', 14)} https://x", _v("c3", 14))
    add("wget-password", f"wget --password={_v('c4', 14)} https://x", _v("c4", 14))
    add("docker-login-password", f"docker login --password {_v('c5', 14)} registry", _v("c5", 14))
    # Headers and cookies.
    add("auth-bearer", f"Authorization: Bearer {_v('h1', 40)}", _v("h1", 40))
    add("auth-basic", f"Authorization: Basic {_v('h2', 28)}=", _v("h2", 28))
    add("auth-token", f"authorization: token {_v('h3', 40)}", _v("h3", 40))
    add("proxy-auth", f"Proxy-Authorization: Basic {_v('h4', 28)}", _v("h4", 28))
    add("bearer-bare", f"sending Bearer {_v('h5', 40)} upstream", _v("h5", 40))
    add("x-api-key", f"-H 'X-API-Key: {_v('h6', 32)}'", _v("h6", 32))
    add("cookie", f"Cookie: session={_v('k1', 32)}; theme=dark", _v("k1", 32))
    add("cookie-lower", f"-H 'cookie: sid={_v('k2', 32)}'", _v("k2", 32))
    add("set-cookie", f"Set-Cookie: auth={_v('k3', 32)}; HttpOnly", _v("k3", 32))
    add("cookie-second", f"Cookie: theme=dark; csrftoken={_v('k4', 32)}", _v("k4", 32))
    # URLs with credentials.
    add("url-postgres", f"postgres://trainer:{_v('u1', 16)}@db.internal:5432/runs", _v("u1", 16))
    add("url-mongodb-srv", f"mongodb+srv://app:{_v('u2', 16)}@cluster0.example.net/db", _v("u2", 16))
    add("url-redis-nouser", f"redis://:{_v('u3', 16)}@cache:6379/0", _v("u3", 16))
    add("url-https-proxy", f"https_proxy=http://alice:{_v('u4', 16)}@proxy.corp:3128", _v("u4", 16))
    add("url-token-user", f"https://{_v('u5', 36)}@github.com/o/r.git", _v("u5", 36))
    add("url-master-addr", f"MASTER_ADDR=http://svc:{_v('u6', 16)}@head-node", _v("u6", 16))
    add("url-query-token", f"https://api.example.com/v1?access_token={_v('u7', 32)}&x=1", _v("u7", 32))
    add("url-query-key", f"https://api.example.com/v1?key={_v('u8', 32)}", _v("u8", 32))
    add("url-amqp", f"amqp://guest:{_v('u9', 16)}@rabbit:5672//", _v("u9", 16))
    # Files users paste: netrc, pgpass, docker config, kube config, ssh keys.
    add("netrc-one-line", f"machine api.wandb.ai login user password {_v('n1', 20)}", _v("n1", 20))
    add("netrc-default", f"default login anonymous password {_v('n2', 20)}", _v("n2", 20))
    add("netrc-multiline", f"  password {_v('n3', 20)}", _v("n3", 20))
    add("netrc-login-password", f"login svc password {_v('n4', 20)}", _v("n4", 20))
    add("docker-config-auth", f'"auth": "{_v("n5", 40)}="', _v("n5", 40))
    add("kubeconfig-token", f"    token: {_v('n6', 48)}", _v("n6", 48))
    add("kube-flag-token", f"kubectl --token={_v('n7', 48)} get pods", _v("n7", 48))
    add("pem-ec", "-----BEGIN EC PRIVATE KEY-----MHcCAQEEIPl4ntedEcKeyBodyAbCdEf0123456789==-----END EC PRIVATE KEY-----",
        "MHcCAQEEIPl4ntedEcKeyBodyAbCdEf0123456789==")
    add("pem-openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAPl4ntedOpenSSH\\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAPl4ntedOpenSSH")
    add("pem-pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\\nlQOYBGPl4ntedPgpKeyBody\\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGPl4ntedPgpKeyBody")
    add("secret-after-word-token", f"using token {_v('w1', 32)} for the hub", _v("w1", 32))
    add("secret-after-word-password", f"password is {_v('w2', 20)}", _v("w2", 20))
    add("secret-after-word-key", f"the api key was {_v('w3', 32)}", _v("w3", 32))
    add("dsn-password", f"Server=db;Database=x;User Id=sa;Password={_v('w4', 16)};", _v("w4", 16))
    add("jdbc-password", f"jdbc:mysql://db:3306/x?user=root&password={_v('w5', 16)}", _v("w5", 16))
    return s


#: (shape, line, secret) for every planted shape (>= 100).
SHAPES = _shapes()

#: Lines that look close to a secret and must come through unchanged: diagnostics depend on them.
NEAR_MISSES = [
    "node02:1019:3019 [3] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'",
    "password authentication failed for user trainer",
    "NCCL_IB_PKEY=0x8001 NCCL_SOCKET_IFNAME=eth0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
    "commId 0x5f3c2a91e0d4b7c8 busId 16000 sha 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "TOKENIZERS_PARALLELISM=false",
    "docker run --user 1000:1000 image",
    "the key to the problem is the interface eth0",
    "grep -w token file.txt",
    "login succeeded for user trainer",
    "Set MASTER_ADDR to a host name or IP address alone",
    "tokens per second: 41234.5",
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.1.0.1<0>",
    "python -u train.py --config cfg.yaml",
    "monkey patching torch.distributed",
    "PWD=/home/shared/run OLDPWD=/home/shared",
    "AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/secrets/eks.amazonaws.com/serviceaccount/token",
]
