"""The ``possible_secret`` patterns (kbdb.learn.secrets): each kind found, ordinary text not."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest

import kbdb
from kbdb.ingest import compute_kbid
from kbdb.learn.secrets import POSSIBLE_SECRET, find_secrets, shannon_entropy

# Built from parts so that this file does not itself look like it leaks credentials.
AWS = "AKIA" + "Q3EGRTZ7XK2LPM4N"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GH_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuv"
OPENAI = "sk-" + "proj-" + "Zx8Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk"
ANTHROPIC = "sk-" + "ant-" + "api03-Zx8Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
GOOGLE = "AIza" + "SyD3x8Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk_l0"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"export AWS_ACCESS_KEY_ID={AWS}", "aws_access_key"),
        ("aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY", "aws_secret_key"),
        (f"token: {GHP}", "github_token"),
        (f"use {GH_PAT} for the CI", "github_token"),
        (f"OPENAI_API_KEY={OPENAI}", "openai_key"),
        (f"client = Anthropic(api_key='{ANTHROPIC}')", "anthropic_key"),
        (f"SLACK_BOT={SLACK}", "slack_token"),
        (f"maps key {GOOGLE} in the config", "google_api_key"),
        (f"Authorization: Bearer {JWT}", "jwt"),
        (PEM, "private_key"),
        ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXk=", "private_key"),
        ("-----BEGIN " + "PRIVATE KEY-----\nMIIEvQ", "private_key"),
        ("DB_PASSWORD=Xq7#mZ2!pL9vR4tK8wN3", "assigned_secret"),
        ('"api_key": "f9Kq2LmZ8xVb4Nw7Rt1Y"', "assigned_secret"),
        ("client_secret: 'Zq8vN2mK7xR4pL9tW3bY6c'", "assigned_secret"),
    ],
)
def test_each_pattern_is_found(text: str, kind: str) -> None:
    assert kind in find_secrets(text)
    assert kind in find_secrets(f"Some prose before.\n\n{text}\n\nAnd after.")


def test_anthropic_key_is_not_also_reported_as_openai() -> None:
    assert find_secrets(ANTHROPIC) == ("anthropic_key",)


@pytest.mark.parametrize(
    "text",
    [
        "The token bucket refills at 100 tokens per second; the password policy needs 12 "
        "characters and the API key rotates monthly.",
        "Set password=changeme in development only.",
        "api_key = <your key here>",
        "token: ${GITHUB_TOKEN}",
        "password: {{ vault_password }}",
        "secret = 'aaaaaaaaaaaaaaaaaaaa'",  # long but not random
        "password = correcthorsebatterystaple",  # no digits: a passphrase example
        "sha256: " + hashlib.sha256(b"release").hexdigest(),
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "token = " + hashlib.sha1(b"x").hexdigest(),  # a hex checksum assigned to "token"
        "request id " + str(uuid.UUID(int=123456789)),
        "kbid " + compute_kbid("text/markdown", "Install", "Run pip install kbdb."),
        "The skeleton key opened sk-ip and AIza is a name.",
        "See https://example.com/eyJ/docs for JSON Web Tokens.",
        "```\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n```",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----",
        "AKIA is the prefix of AWS access key ids.",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == ()


def test_entropy_of_uniform_and_constant_strings() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


def test_learn_warns_and_still_stores(kb: kbdb.KnowledgeBase) -> None:
    rep = kb.learn(
        f"# Deploy\n\nThe CI uses {GHP} to push.\n\n## Notes\n\nNothing secret here.\n",
        docid="deploy",
    )
    warnings = {s.heading: s.warnings for s in rep.sections}
    assert POSSIBLE_SECRET in warnings["Deploy"]
    assert POSSIBLE_SECRET not in warnings["Notes"]
    assert kb.recall(rep.sections[0].kbid).sections[0].content.strip().endswith("to push.")
    assert kb.search("CI push").total == 1


def test_learned_file_with_a_private_key_is_flagged(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = tmp_path / "keys.txt"
    f.write_text(PEM, encoding="utf-8")
    rep = kb.learn_path(f)
    assert POSSIBLE_SECRET in rep.sections[0].warnings


def test_offsets_survive_characters_that_lower_case_to_two() -> None:
    # "İ".lower() is two characters; a shifted offset would skip the assignment.
    assert find_secrets("İİİİİİİİ password = Xq7mZ2pL9vR4tK8wN3") == ("assigned_secret",)


def test_a_megabyte_of_prose_is_scanned_quickly() -> None:
    import time

    text = "The token bucket limits the api rate; rotate the key monthly. " * 16_000
    started = time.perf_counter()
    assert find_secrets(text) == ()
    assert time.perf_counter() - started < 2.0  # 0.25 s measured (32k keywords in 1 MB)
