"""Realistic secrets in realistic files: the labelled set for secret recall.

Each file is a config or code file in the shape it takes in real repositories (Django
``settings.py``, ``.env``, ``~/.aws/credentials``, a GCP service account key, a Slack
bot config, Terraform variables, a Node config module, boto3 code, Spring
``application.properties``, ``.npmrc``), holding credentials generated at build time
in each provider's real format: AWS key ids (``AKIA`` + 16 base32) and 40-character
secret keys, GitHub ``ghp_`` tokens, Slack ``xoxb-`` tokens, Stripe ``sk_live_``
keys, Google ``AIza`` keys, GCP ``private_key_id``s with a real RSA key (generated with
``cryptography``), Django secret keys (Django's own alphabet), database passwords,
hex API tokens, npm tokens. The ground truth is each inserted value's span.

Deterministic in ``seed``: the RSA key too (its primes come from the seeded generator;
``cryptography`` builds the key from those numbers). Run as a script to print the set's
summary.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field

B32 = string.ascii_uppercase + "234567"
B64 = string.ascii_letters + string.digits + "/+"
ALNUM = string.ascii_letters + string.digits
DJANGO = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"
HEX = "0123456789abcdef"


@dataclass
class SecretFile:
    path: str
    text: str
    #: (start, end, kind) of every secret value in ``text``
    gold: list[tuple[int, int, str]] = field(default_factory=list)


class _Doc:
    def __init__(self, path: str) -> None:
        self.path, self.parts, self.gold, self.pos = path, [], [], 0

    def t(self, s: str) -> "_Doc":
        self.parts.append(s)
        self.pos += len(s)
        return self

    def s(self, value: str, kind: str) -> "_Doc":
        self.gold.append((self.pos, self.pos + len(value), kind))
        return self.t(value)

    def done(self) -> SecretFile:
        return SecretFile(self.path, "".join(self.parts), self.gold)


def _prime(rnd: random.Random, bits: int) -> int:
    """A probable prime of ``bits`` bits from a seeded generator (Miller-Rabin, 40 rounds)."""
    while True:
        n = rnd.getrandbits(bits) | (1 << (bits - 1)) | 1
        if all(n % p for p in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)) and _miller_rabin(n, rnd):
            return n


def _miller_rabin(n: int, rnd: random.Random) -> bool:
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for _ in range(40):
        x = pow(rnd.randrange(2, n - 2), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _rsa_pem(rnd: random.Random) -> str:
    """A real 2048-bit RSA private key (PKCS#8 PEM), deterministic in ``rnd``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    e = 65537
    while True:
        p, q = _prime(rnd, 1024), _prime(rnd, 1024)
        phi = (p - 1) * (q - 1)
        if p != q and phi % e:
            break
    d = pow(e, -1, phi)
    numbers = rsa.RSAPrivateNumbers(p=p, q=q, d=d, dmp1=d % (p - 1), dmq1=d % (q - 1), iqmp=pow(q, -1, p),
                                    public_numbers=rsa.RSAPublicNumbers(e, p * q))
    key = numbers.private_key()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def build(seed: int = 0, copies: int = 3) -> list[SecretFile]:
    """``copies`` instances of each template, each with fresh secrets."""
    rnd = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(n))

    def aws_id() -> str:
        return "AKIA" + r(B32, 16)

    def password() -> str:
        return r(ALNUM, 10) + rnd.choice("!#%^*") + r(ALNUM, 5)

    pem = _rsa_pem(random.Random(seed))  # one key per set: prime search costs ~1 s
    files: list[SecretFile] = []
    for i in range(copies):
        d = _Doc(f"proj{i}/mysite/settings.py")
        d.t('"""Django settings for mysite project."""\nfrom pathlib import Path\n\n'
            "BASE_DIR = Path(__file__).resolve().parent.parent\n\n"
            "# SECURITY WARNING: keep the secret key used in production secret!\nSECRET_KEY = '")
        d.s("django-insecure-" + r(DJANGO, 50), "api_key").t("'\n\nDEBUG = False\nALLOWED_HOSTS = ['example.org']\n\n")
        d.t("DATABASES = {\n    'default': {\n        'ENGINE': 'django.db.backends.postgresql',\n"
            "        'NAME': 'mysite',\n        'USER': 'mysite',\n        'PASSWORD': '")
        d.s(password(), "password").t("',\n        'HOST': 'db.internal',\n        'PORT': '5432',\n    }\n}\n\n")
        d.t("AWS_ACCESS_KEY_ID = '").s(aws_id(), "api_key").t("'\nAWS_SECRET_ACCESS_KEY = '")
        d.s(r(B64, 40), "api_key").t("'\nAWS_STORAGE_BUCKET_NAME = 'mysite-static'\nGITHUB_TOKEN = '")
        d.s("ghp_" + r(ALNUM, 36), "api_key").t("'\n")
        files.append(d.done())

        d = _Doc(f"proj{i}/.env")
        d.t("NODE_ENV=production\nPORT=3000\nDATABASE_URL=postgres://app@db:5432/app\nDB_PASSWORD=")
        d.s(password(), "password").t("\nSTRIPE_SECRET_KEY=").s("sk_live_" + r(ALNUM, 24), "api_key")
        d.t("\nSTRIPE_PUBLISHABLE_KEY=pk_live_" + r(ALNUM, 24) + "\nAPI_TOKEN=").s(r(HEX, 32), "api_key")
        d.t("\nSESSION_SECRET=").s(r(ALNUM, 32), "api_key").t("\n")
        files.append(d.done())

        d = _Doc(f"home{i}/.aws/credentials")
        d.t("[default]\naws_access_key_id = ").s(aws_id(), "api_key").t("\naws_secret_access_key = ")
        d.s(r(B64, 40), "api_key").t("\nregion = eu-west-1\n\n[deploy]\naws_access_key_id = ").s(aws_id(), "api_key")
        d.t("\naws_secret_access_key = ").s(r(B64, 40), "api_key").t("\n")
        files.append(d.done())

        key_id = r(HEX, 40)
        pem_json = json.dumps(pem.rstrip("\n"))[1:-1]
        d = _Doc(f"proj{i}/deploy/service-account.json")
        d.t('{\n  "type": "service_account",\n  "project_id": "demo-project-' + r(string.digits, 6) + '",\n'
            '  "private_key_id": "').s(key_id, "api_key").t('",\n  "private_key": "').s(pem_json, "private_key")
        d.t('\\n",\n  "client_email": "deployer@demo-project.iam.gserviceaccount.com",\n'
            '  "client_id": "' + r(string.digits, 21) + '",\n'
            '  "auth_uri": "https://accounts.google.com/o/oauth2/auth",\n'
            '  "token_uri": "https://oauth2.googleapis.com/token"\n}\n')
        files.append(d.done())

        d = _Doc(f"proj{i}/bot/config.yaml")
        d.t("slack:\n  bot_token: ").s("xoxb-" + r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24),
                                       "api_key")
        d.t("\n  signing_secret: ").s(r(HEX, 32), "api_key").t("\n  channel: '#alerts'\ngoogle:\n  api_key: \"")
        d.s("AIza" + r(ALNUM + "-_", 35), "api_key").t("\"\n  timeout: 30\n")
        files.append(d.done())

        d = _Doc(f"proj{i}/infra/terraform.tfvars")
        d.t('region         = "us-east-1"\ninstance_type  = "t3.micro"\naws_access_key = "').s(aws_id(), "api_key")
        d.t('"\naws_secret_key = "').s(r(B64, 40), "api_key").t('"\ndb_password    = "').s(password(), "password")
        d.t('"\n')
        files.append(d.done())

        d = _Doc(f"proj{i}/config/default.js")
        d.t("'use strict';\n\nmodule.exports = {\n  port: process.env.PORT || 8080,\n  stripe: {\n    secretKey: '")
        d.s("sk_live_" + r(ALNUM, 24), "api_key").t("',\n  },\n  github: {\n    clientId: 'Iv1." + r(HEX, 16))
        d.t("',\n    clientSecret: '").s(r(HEX, 40), "api_key").t("',\n  },\n  jwtSecret: '").s(r(ALNUM, 48), "api_key")
        d.t("',\n};\n")
        files.append(d.done())

        d = _Doc(f"proj{i}/tools/upload.py")
        d.t("import boto3\n\n\ndef client():\n    return boto3.client(\n        's3',\n        aws_access_key_id='")
        d.s(aws_id(), "api_key").t("',\n        aws_secret_access_key='").s(r(B64, 40), "api_key")
        d.t("',\n        region_name='us-east-1',\n    )\n")
        files.append(d.done())

        d = _Doc(f"proj{i}/src/main/resources/application.properties")
        d.t("server.port=8080\nspring.datasource.url=jdbc:mysql://db:3306/shop\nspring.datasource.username=shop\n"
            "spring.datasource.password=").s(password(), "password").t("\napp.jwt.secret=").s(r(ALNUM, 64), "api_key")
        d.t("\n")
        files.append(d.done())

        d = _Doc(f"proj{i}/.npmrc")
        d.t("registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=").s("npm_" + r(ALNUM, 36),
                                                                                       "api_key")
        d.t("\n")
        files.append(d.done())
    return files


if __name__ == "__main__":
    fs = build()
    print(f"{len(fs)} files, {sum(len(f.gold) for f in fs)} secrets, "
          f"{sum(len(f.text) for f in fs) / 1e3:.1f} kB")
