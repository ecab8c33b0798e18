"""The ``pii`` stage: detection with validation, policies, idempotence, byte
preservation, the ``pii_counts`` column, and the labelled set's quality targets."""

from __future__ import annotations

import importlib.util
import ipaddress
import re
import sys

import pytest

from datapipe import schema as S
from datapipe.errors import SpecError
from stages.pii import PII_COUNTS_TYPE, PII_TYPES, Detector, PiiConfig, PiiStage
from stages.pii.detect import iban_ok, luhn_ok

DET = Detector()


def found(text: str, detector: Detector = DET) -> list[tuple[str, str]]:
    return [(s.type, text[s.start:s.end]) for s in detector.find(text)]


# -- detection -----------------------------------------------------------------------

POSITIVES = [
    ("email", "Write to jane.doe+news@uni-heidelberg.de today.", "jane.doe+news@uni-heidelberg.de"),
    ("email", "Contact: <Bob.Smith@Company.CO.UK>", "Bob.Smith@Company.CO.UK"),
    ("ip", "The request came from 93.184.216.34 at noon.", "93.184.216.34"),
    ("ip", "connect to [2a00:1450:4001:82a::200e]:443 failed", "2a00:1450:4001:82a::200e"),
    ("ip", "Set the DNS server to 8.8.8.8 and retry.", "8.8.8.8"),
    ("phone", "Call us on (212) 736-5000.", "(212) 736-5000"),
    ("phone", "Tel. +44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
    ("phone", "Telefon: 030 12345678", "030 12345678"),
    ("phone", "Téléphone : 01 42 68 53 00", "01 42 68 53 00"),
    ("phone", "Phone: +81 3-1234-5678", "+81 3-1234-5678"),
    ("phone", "Her number is 089/1234567, she said.", "089/1234567"),
    ("card", "Card number: 4111 1111 1111 1111", "4111 1111 1111 1111"),
    ("card", "Amex 3782-822463-10005 on file", "3782-822463-10005"),
    ("card", "charge 5555555555554444 now", "5555555555554444"),
    ("iban", "IBAN: DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00"),
    ("iban", "Pay to GB82WEST12345698765432 please", "GB82WEST12345698765432"),
    ("ssn", "SSN: 123-45-6788", "123-45-6788"),
    ("ssn", "Social Security Number 219 09 9998", "219 09 9998"),
    ("api_key", "export AWS_ACCESS_KEY_ID=AKIA2E0A8F3B244C9986", "AKIA2E0A8F3B244C9986"),
    ("api_key", 'token = "ghp_ABCDEFghijkl0123456789mnopqrSTUVwxyz"', "ghp_ABCDEFghijkl0123456789mnopqrSTUVwxyz"),
    ("api_key", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc ok", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("api_key", "key=AIzaSyD8xK2mP9qR4sT7uV1wX3yZ5aB6cD0eF2g", "AIzaSyD8xK2mP9qR4sT7uV1wX3yZ5aB6cD0eF2g"),
    ("api_key", "Bearer sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Df3Gh5Jk7Lm9", "sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Df3Gh5Jk7Lm9"),
    ("api_key", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("api_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzAbCdEfGhI", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzAbCdEfGhI"),
    ("jwt", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("password", "DATABASE_URL=postgres://admin:s3cr3tPw@db.internal:5432/app", "s3cr3tPw"),
    ("password", "redis://:Tr0ub4dor&3@cache:6379/0", "Tr0ub4dor&3"),
    ("password", "Server=db;Database=app;User Id=sa;Password=Hunter2!x;Encrypt=True;", "Hunter2!x"),
    ("password", "jdbc:mysql://db:3306/app?user=bob&password=pa55word9&useSSL=true", "pa55word9"),
]


# the misses an outside benchmark found (issue 14): each must now be found, span exact
ISSUE_14_MISSES = [
    ("phone", "Phone: 467 3395", "467 3395"),
    ("phone", "call me on 60-56-85-91 after work", "60-56-85-91"),
    ("phone", "Tel 699 956 915", "699 956 915"),
    ("phone", "Mobile: +1-903-140-4508x769", "+1-903-140-4508x769"),
    ("phone", "reach me on 259.735.7502x459.", "259.735.7502x459"),
    ("phone", "Call us at 281-878-7568 ext. 203 today", "281-878-7568 ext. 203"),
    ("phone", "Stockholm office +46 (0)8 928 571 38", "+46 (0)8 928 571 38"),
    ("phone", "Téléphone : 0688 843 79 56", "0688 843 79 56"),
    ("phone", "Mobile: 8 (816) 618-36-45", "8 (816) 618-36-45"),
    ("phone", "(tel. +62 (78) 477 6375)", "+62 (78) 477 6375"),
    ("phone", "call me on +37022492898 6 - next item", "+37022492898"),
    ("card", "Card: 213176828496175", "213176828496175"),
    ("card", "cc 3590730093437731 exp 09/27", "3590730093437731"),
    ("card", "I paid with card 060430584759 yesterday", "060430584759"),
    ("iban", "iban de89 3704 0044 0532 0130 00 please", "de89 3704 0044 0532 0130 00"),
    ("iban", "pay to gb82west12345698765432 by Friday", "gb82west12345698765432"),
]


@pytest.mark.parametrize("typ,text,value", ISSUE_14_MISSES, ids=[f"{p[0]}-{i}" for i, p in enumerate(ISSUE_14_MISSES)])
def test_issue_14_misses_are_found(typ, text, value):
    assert found(text) == [(typ, value)]


# what the looser rules above must still leave alone
LOOSE_RULE_TRAPS = [
    "Fax: 1998-2003 was the old line; Phone: 2023-05-01; Tel Aviv 2019 2020 2021",
    "call 1 2 3 4 5 6 7 8 to vote; ring 123 456 789 for a sequence; phone 0000000",
    "Tel: 17:55:59,010 logged; contact 12.05.2023 at 15:00; call +999 1234567",
    "Card: 4111 1111 1111 1112 (Luhn fails); card 1234567890123 is a ticket",
    "order 213176828496175 shipped (Luhn-valid, no card word); SKU 3590730093437731",
    "iban de89 3704 0044 0532 0130 01 (typo) and ab12cdef3456 in a hash",
    "my number is +1 292 555 0134, a pseudonym the stage itself writes",
]


@pytest.mark.parametrize("text", LOOSE_RULE_TRAPS, ids=[f"trap-{i}" for i in range(len(LOOSE_RULE_TRAPS))])
def test_loose_rules_keep_their_traps_untouched(text):
    assert found(text) == []


@pytest.mark.parametrize("typ,text,value", POSITIVES, ids=[f"{p[0]}-{i}" for i, p in enumerate(POSITIVES)])
def test_each_type_is_detected_with_its_exact_span(typ, text, value):
    assert found(text) == [(typ, value)]


def test_private_key_block_is_one_span_from_begin_to_end():
    block = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HecXb6\n"
             "mfZF8PriN2dXn9gx5Fr1iUtp2cgGnq3bJ1pFgCB6qjxVjmTiYEnXW9k7Cb5nqUpj\n-----END RSA PRIVATE KEY-----")
    assert found(f"my key:\n{block}\nthanks") == [("private_key", block)]
    truncated = block.rsplit("\n", 1)[0]
    assert found(f"{truncated}\n...\nthe rest is cut") == [("private_key", truncated)]


@pytest.mark.parametrize("number,ok", [
    ("4111 1111 1111 1111", True), ("4111 1111 1111 1112", False),   # Luhn
    ("1234 5678 9012 3452", False),            # passes Luhn; no network starts with 1, and a counting run
    ("3782 822463 10005", True), ("3782 822463 10006", False),
    ("6011 0009 9013 9424", True), ("6011 0009 9013 9425", False),
])
def test_cards_need_luhn_and_a_real_network(number, ok):
    assert luhn_ok("1234567890123452")
    assert bool(found(f"Card number: {number}")) is ok


@pytest.mark.parametrize("iban,ok", [
    ("DE89 3704 0044 0532 0130 00", True), ("DE88 3704 0044 0532 0130 00", False),  # mod 97
    ("DE89 3704 0044 0532 0130 0", False),                                          # length
    ("NL91 ABNA 0417 1643 00", True), ("XX89 3704 0044 0532 0130 00", False),       # country
])
def test_ibans_need_mod97_and_the_registered_length(iban, ok):
    assert iban_ok(iban.replace(" ", "")) is ok
    assert bool(found(f"IBAN: {iban}")) is ok


@pytest.mark.parametrize("ssn,ok", [
    ("123-45-6788", True), ("000-12-3456", False), ("666-12-3456", False), ("912-34-5678", False),
    ("123-00-4567", False), ("123-45-0000", False), ("078-05-1120", False),
])
def test_ssns_exclude_never_issued_ranges(ssn, ok):
    assert bool(found(f"SSN: {ssn}")) is ok


def test_private_ips_are_kept_by_default_and_scrubbed_on_request():
    text = "gateway 192.168.1.254, loopback 127.0.0.1, lan 10.2.3.4, link fe80::1ff:fe23:4567:890a, ula fd12:3456:789a::1"
    assert found(text) == []
    scrubbed = found(text, Detector(scrub_private_ip=True))
    assert [v for _, v in scrubbed] == ["192.168.1.254", "127.0.0.1", "10.2.3.4", "fe80::1ff:fe23:4567:890a", "fd12:3456:789a::1"]
    # documentation ranges belong to nobody: kept even then
    assert found("see 192.0.2.1 and 2001:db8::1", Detector(scrub_private_ip=True)) == []


HARD_NEGATIVES = [
    "Upgrade to version 1.2.3.4 before filing a bug.",
    "Download openssl-1.0.2.17 from the mirror; Chrome 120.0.6099.109 fixed it.",
    "It opened on 2023-04-07 and closed 07.04.2024; filed 04/07/2023.",
    "Logged at 2023-04-07T15:24:38+00:00, epoch 1680880000, created_ms=1680880000123.",
    "Modified 01.12.1981 07:56 by the crawler.",
    "request id 3f2a9c1e-6b7d-4e8f-9a0b-1c2d3e4f5a6b failed",
    "Fixed in commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 and 3f2a9c1.",
    "ISBN 978-3-16-148410-0, ISBN-10 0-306-40615-2, (ISBN 9780306406157)",
    "We have 2^32 = 4294967296 states; mod 1000000007; x = 12 345 678; 0.30000000000000004",
    "int x = 2147483647; MAX = 9223372036854775807; mask 0xDEADBEEF; bits 0100 0011 0100 0000",
    "npm i lodash@4.17.21; git clone git@github.com:acme/widgets.git; <img src='logo@2x.png'>",
    "@property def x(self): return self.a @ W.T  # decorators and matmul",
    "It costs $1,299.99 today; Preis: 49,90 €; a budget of USD 12 345 678.",
    "Part No. 555-234-5678, SKU 4011-2020-3344, Order #202 555 3821, Serial: 0171 2345 6789",
    "Invoice 01 23 45 67 89 and IMEI 356938035643809 and EIN 12-3456789.",
    "test number 4111 1111 1111 1112 fails; IBAN DE88 3704 0044 0532 0130 00 (typo)",
    "MAC 00:1A:2B:3C:4D:5E, open 9:00-17:30, John 3:16, they won 3-2.",
    "e.g. user@example.com or admin@test.invalid, login as bob@buildbox",
    "postgres://user:password@localhost/db and mysql://root:<password>@db:3306/x and https://u:${TOKEN}@git.host/r",
    "AKIAIOSFODNN7EXAMPLE ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx sk-your-api-key-here sk-learn-compatible-estimator",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEb8kN7Zb1Y2xQvUQ3n\n-----END PUBLIC KEY-----",
    "The file must start with -----BEGIN RSA PRIVATE KEY----- and end with the END line.",
    "a population of 8 336 817; see pp. 123-145; doi:10.1000/1822347; area code (295) is reserved",
    "a population of 1 @,@ 234 @,@ 567 inhabitants and 1844-1994 and 765 F. 2d 1417 (1985)",
]


@pytest.mark.parametrize("text", HARD_NEGATIVES, ids=[f"neg-{i}" for i in range(len(HARD_NEGATIVES))])
def test_hard_negatives_are_untouched(text):
    assert found(text) == []
    for policy in ("placeholder", "pseudonym", "remove"):
        assert PiiStage(PiiConfig(policy=policy)).scrub_text(text, "d")[0] == text


# -- policies ---------------------------------------------------------------------------

MIXED = ("Mail jane.doe@gmail.com or JANE.DOE@GMAIL.COM, call +44 20 7946 0958 or (212) 736-5000, "
         "card 4111-1111-1111-1111, IBAN DE89 3704 0044 0532 0130 00, SSN 123-45-6788, host 93.184.216.34 "
         "and 2a00:1450:4001:82a::200e, key AKIA2E0A8F3B244C9986, url postgres://admin:s3cr3tPw@db:5432/x, "
         "again jane.doe@gmail.com and 93.184.216.34; other mail bob@proton.me.")


def test_placeholder_policy_writes_typed_placeholders():
    out, spans = PiiStage(PiiConfig(policy="placeholder")).scrub_text(MIXED, "d")
    assert out.startswith("Mail <EMAIL> or <EMAIL>, call <PHONE> or <PHONE>, card <CARD_NUMBER>, IBAN <IBAN>, SSN <SSN>, "
                          "host <IP_ADDRESS> and <IP_ADDRESS>, key <API_KEY>, url postgres://admin:<PASSWORD>@db:5432/x")
    assert out.endswith("other mail <EMAIL>.")
    custom = PiiStage(PiiConfig(placeholders={"email": "[mail]"})).scrub_text("write to bob@proton.me", "d")[0]
    assert custom == "write to [mail]"


def test_remove_policy_deletes_exactly_the_spans():
    text = "Write to bob@proton.me or call 030 12345678 today."
    assert PiiStage(PiiConfig(policy="remove")).scrub_text(text, "d")[0] == "Write to  or call  today."


def test_per_type_policies_and_disabled_types():
    cfg = PiiConfig(types=["email", "phone"], policy="remove", policies={"email": "placeholder"})
    out = PiiStage(cfg).scrub_text("bob@proton.me / 030 12345678 / 4111 1111 1111 1111", "d")[0]
    assert out == "<EMAIL> /  / 4111 1111 1111 1111"


def _pseudo(text, doc="doc-1", **kw):
    return PiiStage(PiiConfig(policy="pseudonym", key=kw.pop("key", "k1"), **kw)).scrub_text(text, doc)


def test_pseudonyms_keep_the_shape_of_their_type():
    out, spans = _pseudo(MIXED)
    fakes = re.split(r"[ ,;]+", out)
    email = next(w for w in fakes if w.endswith(("@example.com", "@example.net", "@example.org")))
    assert re.fullmatch(r"[a-z]{4}\.[a-z]{3}@example\.(com|net|org)", email)       # jane.doe -> xxxx.xxx
    ip4 = next(w for w in fakes if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", w))
    assert any(ipaddress.ip_address(ip4) in ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
    assert re.search(r"2001:db8:[0-9a-f:]+", out)
    card = re.search(r"card (\d{4}-\d{4}-\d{4}-\d{4})", out).group(1)
    assert card[0] == "4" and not luhn_ok(card.replace("-", ""))
    iban = re.search(r"IBAN (DE\d\d \d{4} \d{4} \d{4} \d{4} \d\d)", out).group(1)
    assert not iban_ok(iban.replace(" ", ""))
    assert re.search(r"SSN 000-\d\d-\d{4}", out)
    # phones: NANP numbers in reserved N9X area codes; a NANP original keeps its layout
    assert re.search(r"call \+1 [2-9]9\d [2-9]\d\d \d{4} or \([2-9]9\d\) [2-9]\d\d-\d{4}", out)
    assert re.search(r"key AKIA[A-Z0-9]{9}EXAMPLE", out)
    assert re.search(r"postgres://admin:[A-Za-z0-9]+EXAMPLE@db:5432/x", out)


def test_pseudonyms_are_consistent_within_a_document():
    out, _ = _pseudo(MIXED)
    emails = re.findall(r"[\w.]+@example\.(?:com|net|org)", out)
    assert len(emails) == 4
    assert emails[0] == emails[1] == emails[2]           # jane.doe@gmail.com, its upper-case twin, its repeat
    assert emails[3] != emails[0]                         # bob@proton.me
    ips = re.findall(r"(?:192\.0\.2|198\.51\.100|203\.0\.113)\.\d+", out)
    assert len(ips) == 2 and ips[0] == ips[1]


def test_pseudonyms_repeat_across_runs_and_depend_on_key_and_scope():
    first = _pseudo(MIXED)[0]
    assert _pseudo(MIXED)[0] == first                    # a new stage, same key: same output
    assert _pseudo(MIXED, key="k2")[0] != first          # another key: other fakes
    assert _pseudo(MIXED, doc="doc-2")[0] != first       # document scope: no linkage across documents
    assert _pseudo(MIXED, doc="doc-2", pseudonym_scope="corpus")[0] == _pseudo(MIXED, pseudonym_scope="corpus")[0]


@pytest.mark.parametrize("policy", ["placeholder", "pseudonym", "remove"])
def test_scrubbing_is_idempotent(policy):
    stage = PiiStage(PiiConfig(policy=policy, key="k"))
    once = stage.scrub_text(MIXED, "d")[0]
    assert once != MIXED
    assert stage.scrub_text(once, "d")[0] == once


def test_bytes_outside_spans_are_identical():
    text = "Grüße aus Köln 🌍 — mail ünïcødé@exämple.de? no: juergen.m@web.de … 電話 +49 30 12345678 終わり\r\n"
    stage = PiiStage(PiiConfig(policy="pseudonym", key="k"))
    batch = S.make_batch(source="s", ids=["a"], texts=[text])
    out = stage.process(batch)[0].column(S.TEXT)[0].as_py()
    spans = stage.detector.find(text)
    assert [s.type for s in spans] == ["email", "phone"]
    pieces = [text[:spans[0].start], text[spans[0].end:spans[1].start], text[spans[1].end:]]
    # the output is the original pieces, byte for byte, around the two replacements
    pos = 0
    for piece in pieces:
        i = out.encode().find(piece.encode(), pos)
        assert i >= pos
        pos = i + len(piece.encode())
    assert out.encode().startswith(pieces[0].encode()) and out.encode().endswith(pieces[2].encode())


# -- the stage on Arrow batches ------------------------------------------------------------


def test_pii_counts_column_and_report_counters():
    texts = ["nothing here, version 1.2.3.4", "mail bob@proton.me and jane@gmail.com, call 030 12345678",
             "only a card 4111 1111 1111 1111", "dropped already: bob@proton.me"]
    batch = S.make_batch(source="web", ids=["a", "b", "c", "d"], texts=texts,
                         reject_reasons=[None, None, None, "read:invalid_utf8"])
    stage = PiiStage(PiiConfig(types=["email", "phone", "card", "ip"]))
    out, stats = stage.process(batch)
    assert out.schema.field("pii_counts").type == PII_COUNTS_TYPE
    counts = out.column("pii_counts").to_pylist()
    assert counts[0] == {"email": 0, "ip": 0, "phone": 0, "card": 0, "iban": None, "ssn": None, "api_key": None,
                         "private_key": None, "jwt": None, "password": None}
    assert (counts[1]["email"], counts[1]["phone"], counts[1]["card"]) == (2, 1, 0)
    assert counts[2]["card"] == 1
    assert counts[3] is None                                  # rows dropped earlier are not scrubbed
    assert out.column(S.TEXT).to_pylist() == [
        texts[0], "mail <EMAIL> and <EMAIL>, call <PHONE>", "only a card <CARD_NUMBER>", texts[3]]
    st = stats["web"]
    assert st.changes == {"email": 2, "ip": 0, "phone": 1, "card": 1}
    assert (st.docs_in, st.docs_out, st.docs_changed) == (3, 3, 2)


def test_a_document_that_was_only_pii_is_dropped_as_empty_under_remove():
    batch = S.make_batch(source="s", ids=["a", "b"], texts=["bob@proton.me", "hi bob@proton.me"])
    out, stats = PiiStage(PiiConfig(policy="remove")).process(batch)
    assert out.column(S.REJECT_REASON).to_pylist() == ["pii:empty", None]
    assert out.column(S.TEXT).to_pylist() == ["bob@proton.me", "hi "]   # rejects keep their input text
    assert stats["s"].dropped == {"pii:empty": 1}


def test_config_errors_name_the_field_and_the_fix():
    with pytest.raises(SpecError, match="unknown type.*'phones'.*valid types"):
        PiiConfig(types=["phones"])
    with pytest.raises(SpecError, match="must be a list"):
        PiiConfig(types="email")
    with pytest.raises(SpecError, match="pii.policy.*'mask'"):
        PiiConfig(policy="mask")
    with pytest.raises(SpecError, match="pii.policies.email"):
        PiiConfig(policies={"email": "hash"})
    with pytest.raises(SpecError, match="idempotent"):
        PiiConfig(placeholders={"email": "nobody@gmail.com"})
    with pytest.raises(SpecError, match="pii.key"):
        PiiConfig(key="")
    with pytest.raises(SpecError, match="pseudonym_scope"):
        PiiConfig(pseudonym_scope="global")
    assert PiiConfig(types=["email", "email"]).types == ("email",)


# -- the labelled set ------------------------------------------------------------------


def _bench_module(repo_dir, name):
    """bench/<name>.py, loaded by path (bench/ is not a package and must not go on
    sys.path: scripts there may shadow standard modules)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, repo_dir / "bench" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="module")
def labelled(shared_dir, repo_dir):
    pii_labelled = _bench_module(repo_dir, "pii_labelled")
    pii_quality = _bench_module(repo_dir, "pii_quality")
    return pii_labelled, pii_quality, pii_labelled.build(shared_dir)


def test_labelled_set_is_deterministic_and_covers_every_type(labelled, shared_dir):
    pii_labelled, _, docs = labelled
    assert {g.type for d in docs for g in d.gold} == set(PII_TYPES)
    assert sum(len(d.gold) for d in docs) >= 500 and sum(len(d.negatives) for d in docs) >= 300
    small = pii_labelled.build(shared_dir, per_type=3, neg_rounds=1)
    assert small == pii_labelled.build(shared_dir, per_type=3, neg_rounds=1)
    for d in docs:  # spans point at what they claim
        for g in d.gold:
            assert d.text[g.start:g.end].strip() == d.text[g.start:g.end] != ""


def test_labelled_set_meets_the_quality_targets(labelled):
    _, pii_quality, docs = labelled
    q = pii_quality.evaluate(docs)
    assert q.failures() == [], pii_quality.format_table(q)


@pytest.mark.parametrize("policy", ["placeholder", "pseudonym", "remove"])
def test_labelled_set_fast_path_equals_naive_and_is_idempotent(labelled, policy):
    _, _, docs = labelled
    stage = PiiStage(PiiConfig(policy=policy, key="k", scrub_private_ip=policy == "remove"))
    batch = S.make_batch(source="lab", ids=[d.id for d in docs], texts=[d.text for d in docs])
    out = stage.process(batch)[0].column(S.TEXT).to_pylist()
    naive = [stage.replacer.apply(d.text, stage.detector.find(d.text, gated=False), d.id) for d in docs]
    assert out == naive
    again = stage.process(S.make_batch(source="lab", ids=[d.id for d in docs], texts=out))[0]
    assert again.column(S.TEXT).to_pylist() == out
    assert all(v == 0 for c in again.column("pii_counts").to_pylist() for v in c.values() if v is not None)


@pytest.fixture(scope="module")
def faker_set(shared_dir, repo_dir):
    pytest.importorskip("faker", reason="the bench extra installs faker")
    pii_faker = _bench_module(repo_dir, "pii_faker")
    pii_quality = _bench_module(repo_dir, "pii_quality")
    return pii_quality, pii_faker.build(shared_dir, per_type=60)


def test_faker_set_recall_meets_the_issue_14_targets(faker_set):
    pii_quality, docs = faker_set
    q = pii_quality.evaluate(docs)
    for t, target in pii_quality.FAKER_RECALL_TARGETS.items():
        assert q.per_type[t].gold == 60
        assert q.per_type[t].recall >= target, (t, q.misses)
    assert q.overall.fp == 0, q.false_positives


def test_faker_set_fast_path_equals_naive_and_pseudonyms_are_not_redetected(faker_set):
    _, docs = faker_set
    stage = PiiStage(PiiConfig(policy="pseudonym", key="k"))
    batch = S.make_batch(source="fk", ids=[d.id for d in docs], texts=[d.text for d in docs])
    out = stage.process(batch)[0].column(S.TEXT).to_pylist()
    assert out == [stage.replacer.apply(d.text, stage.detector.find(d.text, gated=False), d.id) for d in docs]
    again = stage.process(S.make_batch(source="fk", ids=[d.id for d in docs], texts=out))[0]
    assert again.column(S.TEXT).to_pylist() == out


# -- issue 27 / 29: numbering plans, IPv6 forms, precision on tables --------------------


def _ascii_table() -> str:
    """The ASCII chart as Wikipedia's article lays it out (name, binary in 3+4 bits,
    octal, decimal, hex, abbreviation or glyph), built from the standard library's own
    tables: the layout issue 29's user scrubbed into 32 ``<PHONE>``s."""
    import unicodedata
    from curses import ascii as A
    control = ["Null", "Start of Heading", "Start of Text", "End of Text", "End of Transmission", "Enquiry",
               "Acknowledgement", "Bell", "Backspace", "Horizontal Tab", "Line Feed", "Vertical Tab", "Form Feed",
               "Carriage Return", "Shift Out", "Shift In", "Data Link Escape", "Device Control 1",
               "Device Control 2", "Device Control 3", "Device Control 4", "Negative Acknowledgement",
               "Synchronous Idle", "End of Transmission Block", "Cancel", "End of Medium", "Substitute", "Escape",
               "File Separator", "Group Separator", "Record Separator", "Unit Separator"]
    rows = []
    for i in range(128):
        b = f"{i:07b}"
        name = control[i] if i < 32 else "Delete" if i == 127 else unicodedata.name(chr(i)).title()
        abbr = A.controlnames[i] if i < 32 else "DEL" if i == 127 else chr(i)
        rows.append(f"{name} {b[:3]} {b[3:]} {i:03o} {i} {i:02X} {abbr}")
    return "\n".join(rows)


def test_numeric_tables_get_no_phone(shared_dir):
    assert found("Device Control 4 001 0100 024 20 14 NAK") == []  # issue 29, verbatim
    table = _ascii_table()
    assert "Device Control 4 001 0100 024 20 14 DC4" in table
    assert [t for t, _ in found(table)] == []
    # real Wikipedia: WikiText-2 (numeric lists, results tables) and raw markup tables
    texts = [(shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")]
    texts += [f.read_text(encoding="utf-8", errors="replace")
              for f in sorted((shared_dir / "corpora" / "wiki" / "wikitext-markup").glob("*.txt"))]
    assert sum("{|" in t for t in texts) >= 5  # the markup holds real tables
    phones = [v for t in texts for typ, v in found(t) if typ == "phone"]
    assert phones == []


PLAN_PHONES = [  # numbering-plan formats with labels before and after (issue 27's misses)
    ("Телефон: 8 (301) 916-94-49", "8 (301) 916-94-49"),
    ("电话：010 1234 5678", "010 1234 5678"),
    ("131 1249 7588 -Office", "131 1249 7588"),
    ("(11) 97311-8101 (mobile)", "(11) 97311-8101"),
    ("800 191 0737 - Office", "800 191 0737"),
    ("074174 43114 fax", "074174 43114"),
    ("You can reach the front desk at +63 1800 3 287 7645.", "+63 1800 3 287 7645"),
    ("bookings at +55800117015 or at the door", "+55800117015"),
    ("The shop is registered under 1800 14 3279.", "1800 14 3279"),
    ("Contact the office at 800 112 3489.", "800 112 3489"),
]


@pytest.mark.parametrize("text,value", PLAN_PHONES)
def test_numbering_plan_phones_with_labels_are_found(text, value):
    assert found(text) == [("phone", value)]


@pytest.mark.parametrize("value", [
    "2a00:1450:4001:82a::200e", "2a00:1450:4001:082a:0000:0000:0000:200e", "2a00:1450:4001:82a:0:0:0:200e",
    "2A00:1450:4001:82A::200E", "2a00:1450:4001:82a:0::200e", "2a00:1450:4001:82a::32.1.32.14",
    "2a00:1450:4001:82a:0:0:32.1.32.14", "::ffff:93.184.216.34", "2606:4700::6810:84e5",
])
def test_ipv6_is_found_in_every_textual_form(value):
    assert found(f"connected from {value} at noon") == [("ip", value)]
    assert found(f"curl http://[{value}]:8080/") == [("ip", value)]


@pytest.mark.parametrize("text", [
    "Released as version 3.10.12 on 2023-06-06 for $1,299.99.",
    "Python 3.11.7 (main, Dec 8 2023, 10:44:11) [GCC 12.2.0]",
    "Price: 1 299 000 RUB, or 12 345,67 EUR per unit",
    "Order 2024 0312 4455 shipped on 12.03.2024.",
    "at 10 000 feet, at 1 234 567 inhabitants",
    "Windows 10.0.19045.3693 build", "id 0100 024 20 14 in the export",
    "'%H %M %S %f' gives 01 02 03 000004", "test(1234., '012f', '01234.000000')",
    "Population 1 380 004 385 (2020 census) at 464 per km2",
])
def test_versions_dates_prices_and_ids_survive(text):
    assert found(text) == []


@pytest.fixture(scope="module")
def plan_set(shared_dir, repo_dir):
    pii_numbering = _bench_module(repo_dir, "pii_numbering")
    pii_quality = _bench_module(repo_dir, "pii_quality")
    return pii_quality, pii_numbering.build(shared_dir, per_cell=1, ipv6=200)


def test_numbering_plan_set_meets_the_issue_27_targets(plan_set):
    pii_quality, docs = plan_set
    q = pii_quality.evaluate(docs)
    assert q.per_type["phone"].gold >= 250 and q.per_type["ip"].gold == 200
    regions = {g.fmt.split("/")[1] for d in docs for g in d.gold if g.type == "phone"}
    assert len(regions) == 30
    for t, target in pii_quality.PLAN_RECALL_TARGETS.items():
        assert q.per_type[t].recall >= target, (t, q.misses)
    assert q.overall.fp == 0, q.false_positives


def test_numbering_plan_set_fast_path_equals_naive_and_pseudonyms_are_not_redetected(plan_set):
    _, docs = plan_set
    stage = PiiStage(PiiConfig(policy="pseudonym", key="k"))
    batch = S.make_batch(source="np", ids=[d.id for d in docs], texts=[d.text for d in docs])
    out = stage.process(batch)[0].column(S.TEXT).to_pylist()
    assert out == [stage.replacer.apply(d.text, stage.detector.find(d.text, gated=False), d.id) for d in docs]
    again = stage.process(S.make_batch(source="np", ids=[d.id for d in docs], texts=out))[0]
    assert again.column(S.TEXT).to_pylist() == out


# -- issue 36: labels on the line above, extensions, kind words after, IPv6 forms --------

ISSUE_36_FOUND = [  # the four kinds of misses an outside set reported, each as it is written
    ("phone", "Phone:\n467 3395", "467 3395"),
    ("phone", "Contact us by phone:\r\n  467-3395\nopen daily", "467-3395"),
    ("phone", "Kim Lee\n- Tel.\n699 956 915\n", "699 956 915"),
    ("phone", "The front desk is 903-140-4508x769 on weekdays.", "903-140-4508x769"),
    ("phone", "Questions go to 807-7439, ext. 0488 today", "807-7439, ext. 0488"),
    ("phone", "Phone: 0117 4960369 Ext: 37997", "0117 4960369 Ext: 37997"),
    ("phone", "Tel. +49 (0) 30 505 006 03 #3337", "+49 (0) 30 505 006 03 #3337"),
    ("phone", "Dana Whitfield 931.4745/Mobile, Lena at the office", "931.4745"),
    ("phone", "Reach the team: 931 4745 (work).", "931 4745"),
    ("phone", "467-3395-Fax", "467-3395"),
    ("phone", "(11) 99546-6365 / cell", "(11) 99546-6365"),
    ("ip", "ip:2a02:c7f:d20:6b00::1 was banned", "2a02:c7f:d20:6b00::1"),
    ("ip", "IPv6:2F21:5AA:53CE:E9C:1D6F:8:0:FA", "2F21:5AA:53CE:E9C:1D6F:8:0:FA"),
    ("ip", "client 2073:c8:0:b::0.0.0.184: connected", "2073:c8:0:b::0.0.0.184"),
    ("ip", "NAT64 peer 64:ff9b::93.184.216.34 answered", "64:ff9b::93.184.216.34"),
]


@pytest.mark.parametrize("typ,text,value", ISSUE_36_FOUND, ids=[f"{p[0]}-{i}" for i, p in enumerate(ISSUE_36_FOUND)])
def test_issue_36_layouts_are_found(typ, text, value):
    assert found(text) == [(typ, value)]
    # the stage's gates (RE2 over the batch) let the same document through
    stage = PiiStage(PiiConfig(types=[typ]))
    out = stage.process(S.make_batch(source="s", ids=["d"], texts=[text]))[0]
    assert out.column("pii_counts").to_pylist()[0][typ] == 1


ISSUE_36_TRAPS = [  # look-alikes of those kinds: none is PII
    "The alarm went off at 12:30:45 sharp; elapsed 01:02:03.004, laps 1:23:45:67",
    "MAC 00:1a:2b:3c:4d:5e, EUI-64 02:1a:2b:ff:fe:3c:4d:5e, fingerprint 16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48",
    "use std::chrono::seconds and crate::io::Result; MD5:9e:10:7d:9d:37:2b:b6:82:6b:d8:1d:35:42:a4:19:d6",
    "a 1920x1080 screen, 2560 x 1440 at 0x7fffffff",
    "about 12 345 678 mobile subscribers; sold 1,234,567 mobile phones; the seasons 2019 2020 2021 home games",
    "Fax:\n1998-2003\nPhone:\n12.03.2021",
    "They did not call\n2019 a good year, and order 4467 3395 (home) shipped",
    "Release 2.4.1 and #1234 fixed it; build 20240311 x86",
]


@pytest.mark.parametrize("text", ISSUE_36_TRAPS, ids=[f"trap-{i}" for i in range(len(ISSUE_36_TRAPS))])
def test_issue_36_look_alikes_are_untouched(text):
    assert found(text) == []
    assert found(text, Detector(scrub_private_ip=True)) == []


@pytest.fixture(scope="module")
def layouts_set(shared_dir, repo_dir):
    pytest.importorskip("faker", reason="the bench extra installs faker")
    pii_layouts = _bench_module(repo_dir, "pii_layouts")
    pii_quality = _bench_module(repo_dir, "pii_quality")
    return pii_quality, pii_layouts.build(shared_dir, per_kind=60, neg_rounds=3)


def test_layouts_set_meets_the_issue_36_targets(layouts_set):
    pii_quality, docs = layouts_set
    per_kind, negatives, q = pii_quality.layout_scores(docs, Detector())
    for kind, s in per_kind.items():
        assert s.gold == 60
        assert s.recall >= pii_quality.LAYOUT_RECALL_TARGET, (kind, q.misses)
        assert s.precision >= pii_quality.LAYOUT_PRECISION_TARGET, (kind, q.false_positives)
    assert sum(v[0] for v in negatives.values()) >= 50 and sum(v[1] for v in negatives.values()) == 0, negatives


def test_layouts_set_fast_path_equals_naive_and_pseudonyms_are_not_redetected(layouts_set):
    _, docs = layouts_set
    stage = PiiStage(PiiConfig(policy="pseudonym", key="k"))
    batch = S.make_batch(source="ly", ids=[d.id for d in docs], texts=[d.text for d in docs])
    out = stage.process(batch)[0].column(S.TEXT).to_pylist()
    assert out == [stage.replacer.apply(d.text, stage.detector.find(d.text, gated=False), d.id) for d in docs]
    again = stage.process(S.make_batch(source="ly", ids=[d.id for d in docs], texts=out))[0]
    assert again.column(S.TEXT).to_pylist() == out
