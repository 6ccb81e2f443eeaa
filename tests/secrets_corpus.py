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
