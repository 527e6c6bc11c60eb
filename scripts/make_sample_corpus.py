#!/usr/bin/env python3
"""Write spamkit's bundled sample corpus: ``corpora/sample/{ham,spam}/NNNN.eml``.

Every message is composed here, from sentence templates and word lists written
for spamkit; nothing is taken from a public corpus. The output is
deterministic (seeded), and ``tests/test_sample_corpus.py`` regenerates it and
checks that the committed files are exactly what this script writes.

It is raw RFC 5322 mail with the variety real mail has: plain text,
multipart/alternative (text + HTML), HTML-only, base64 and quoted-printable
bodies, non-UTF-8 charsets (ISO-8859-1, KOI8-R, Shift_JIS, Windows-1252),
RFC 2047 encoded subjects, attachments, a message/rfc822 forward, and a few
deliberately malformed messages (a header line without a colon, a missing
MIME boundary, a wrong charset label, an unknown charset, raw 8-bit headers).
Numbers in file names give arrival order across both classes, and the Date
headers follow it, so chronological splits work on it.

    python scripts/make_sample_corpus.py [--out corpora/sample] [--seed 2026]
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import quopri
import random
import shutil
from pathlib import Path

FIRST = ["Anna", "Marco", "Priya", "Tomás", "Jun", "Olga", "David", "Fatima", "Lars", "Chloé",
         "Kwame", "Sofia", "Hiroshi", "Elena", "Ravi", "Grace", "Mateo", "Ingrid", "Yusuf", "Nora"]
LAST = ["Keller", "Rossi", "Natarajan", "García", "Tanaka", "Ivanova", "Okafor", "Haddad",
        "Lindqvist", "Moreau", "Mensah", "Costa", "Sato", "Petrova", "Iyer", "Walsh"]
HAM_DOMAINS = ["northfield-labs.example", "uni-tessaro.example", "greenbridge.example",
               "kellerfamily.example", "openhydro.example", "mail.riverside.example"]
SHOP_DOMAINS = ["bookshop.example", "rail-tickets.example", "hardware-store.example", "co-op.example"]
SPAM_DOMAINS = ["best-deals-4u.example", "pharma-direct.example", "win-big-now.example",
                "secure-verify-account.example", "cheap-replicas.example", "stock-alert.example",
                "meet-singles.example", "loan-approval.example"]
PROJECTS = ["the sensor calibration", "the Q3 budget", "the grant proposal", "the website redesign",
            "the data pipeline", "the field survey", "the migration to the new cluster",
            "the quarterly report", "the hiring plan", "the user study", "the release notes"]
PLACES = ["room 204", "the main lab", "the café on Elm Street", "the library", "building C",
          "the video call", "the conference room", "my office"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "next week", "tomorrow"]
TIMES = ["9:30", "10:00", "11:15", "14:00", "15:30", "16:45"]
ITEMS = ["the draft", "the slides", "the spreadsheet", "the minutes", "the invoice",
         "the photos", "the contract", "the test results", "the agenda", "the schedule"]
TOPICS = ["python packaging", "rust async", "postgres indexes", "climate models", "bird counts",
          "bread baking", "the chess club", "board games", "cycling routes", "gardening"]

HAM_SENTENCES = {
    "work": [
        "Could you take a look at {item} before {day}?",
        "I have updated {item} for {project} and pushed the changes.",
        "The meeting about {project} is moved to {day} at {time} in {place}.",
        "Thanks for your comments on {item}; I agree with most of them.",
        "We still need numbers from the finance team before we can close {project}.",
        "Let me know if {time} on {day} works for you.",
        "I attached {item}, please check section 3 in particular.",
        "The deadline for {project} is still the end of the month.",
        "Can we discuss the open questions on {project} during the call?",
        "I will be out of the office on {day}, so please send {item} to {first}.",
        "The results look reasonable, but the second run differs by two percent.",
        "Please review the pull request when you have a moment.",
    ],
    "personal": [
        "Are you coming to dinner on {day}? {first} is cooking.",
        "The kids loved the trip, I will send {item} tonight.",
        "Happy birthday! Hope you have a lovely day.",
        "Mum asked whether you still have the recipe for the lemon cake.",
        "We are thinking of visiting {first} in the spring, want to join?",
        "I found the book you lent me, I will bring it on {day}.",
        "The garden is finally green again after all that rain.",
        "Call me when you land, whatever the time.",
        "It was so good to see everyone at the reunion.",
    ],
    "list": [
        "Has anyone tried the new release of {topic} tooling?",
        "I wrote a short summary of yesterday's discussion on {topic}.",
        "The next meetup on {topic} will be on {day} at {place}.",
        "There is a known issue with the documentation; a fix is in review.",
        "Please keep replies on the list so others can follow.",
        "The archive of previous threads is linked from the group page.",
        "I disagree with the last post, the benchmark was not measuring the same thing.",
        "Minutes of the last meeting are attached for those who missed it.",
    ],
    "commerce": [
        "Your order {order} has been shipped and should arrive on {day}.",
        "Thank you for your purchase; your receipt is below.",
        "Your subscription renews next month; no action is needed.",
        "This month's newsletter: new opening hours and a free workshop for members.",
        "Your booking for {place} on {day} is confirmed.",
        "You can manage your account settings in the member area.",
        "Our spring offer for members: 10% off all workshop tickets.",
    ],
}
SPAM_SENTENCES = {
    "pharma": [
        "Buy cheap meds online with no prescription needed!",
        "Best prices on viagra and cialis, discreet shipping worldwide.",
        "Save up to 80% on your pharmacy bills today.",
        "Our certified online pharmacy ships within 24 hours.",
        "Lose weight fast with our new miracle pills, guaranteed results.",
        "Order now and get free pills with every purchase!",
    ],
    "money": [
        "Congratulations! You have won $1,000,000 in our international lottery.",
        "To claim your prize, reply with your full name and bank details.",
        "I am a barrister representing a late client with no next of kin.",
        "We need a trusted partner to transfer $15,500,000 out of the country.",
        "You will receive 30% of the total sum for your assistance.",
        "Get a loan approved in minutes, even with bad credit!",
        "Refinance your mortgage at the lowest rate ever offered.",
        "Make $5000 a week working from home, no experience required!",
    ],
    "phish": [
        "Your account has been suspended due to unusual activity.",
        "Please verify your account information within 24 hours to avoid closure.",
        "Click the link below to confirm your password and security details.",
        "Dear valued customer, we detected a login from an unknown device.",
        "Failure to update your billing information will result in account termination.",
    ],
    "goods": [
        "Luxury replica watches at unbeatable prices, order now!",
        "Designer handbags 90% off, limited stock available.",
        "This hot stock is about to explode, buy before Monday!",
        "Hot singles in your area are waiting to meet you tonight.",
        "Cheap OEM software: download it today and save hundreds.",
        "Act now! This exclusive offer expires at midnight.",
        "Free gift card for the first 100 customers who click here.",
    ],
}
SPAM_SUBJECTS = ["Re: your order", "You have WON!!!", "URGENT: account verification required",
                 "Cheap meds online", "Business proposal", "Lowest mortgage rates", "Hot stock alert",
                 "Replica watches", "Make money fast", "Your prize is waiting", "Security alert",
                 "Special offer just for you", "FREE gift inside", "Lose 20 pounds in 2 weeks",
                 "Meet singles tonight", "Your invoice #{order}", "Final notice"]
HAM_SUBJECTS = {
    "work": ["Re: {project}", "Meeting on {day}", "{item} for review", "Update on {project}",
             "Question about {project}", "Notes from today", "Re: Re: {item}"],
    "personal": ["Dinner on {day}?", "Photos!", "Re: the trip", "Happy birthday", "Weekend plans",
                 "Recipe"],
    "list": ["[{topic}] weekly digest", "[{topic}] meetup {day}", "Re: [{topic}] new release",
             "[{topic}] minutes"],
    "commerce": ["Your order {order} has shipped", "Receipt for your purchase", "Booking confirmed",
                 "Member newsletter", "Your subscription"],
}


def fill(template: str, rng: random.Random) -> str:
    return template.format(
        item=rng.choice(ITEMS), day=rng.choice(DAYS), project=rng.choice(PROJECTS),
        time=rng.choice(TIMES), place=rng.choice(PLACES), first=rng.choice(FIRST),
        topic=rng.choice(TOPICS), order=f"{rng.randrange(10000, 99999)}")


def person(rng: random.Random, domains) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    local = f"{first.lower()}.{last.lower()}".encode("ascii", "ignore").decode()
    return f"{first} {last}", f"{local}@{rng.choice(domains)}"


def paragraph(rng: random.Random, pool: dict, topic: str, n: int, cross: dict | None = None) -> str:
    """n sentences: mostly on the topic, some from the class's other topics, and (with
    ``cross``) a few from the other class, as real ham quotes offers and spam imitates ham."""
    sentences = pool[topic]
    other = [s for t, ss in pool.items() if t != topic for s in ss]
    foreign = [s for ss in (cross or {}).values() for s in ss]
    chosen = []
    for _ in range(n):
        draw = rng.random()
        source = foreign if foreign and draw < 0.3 else (other if draw < 0.5 else sentences)
        chosen.append(fill(rng.choice(source), rng))
    return " ".join(chosen)


def encode_header(text: str, charset: str = "utf-8") -> str:
    """RFC 2047 B-encoding for non-ASCII header text."""
    if text.isascii():
        return text
    return f"=?{charset}?B?{base64.b64encode(text.encode(charset)).decode()}?="


def headers(rng, sender, to, subject, date, msgid_domain, extra=()) -> list[str]:
    name, addr = sender
    lines = [
        f"Return-Path: <{addr}>",
        f"Received: from mx{rng.randrange(1, 9)}.{addr.split('@')[1]} "
        f"([192.0.2.{rng.randrange(1, 255)}]) by mail.example.org with ESMTP id "
        f"{rng.randrange(10**9):09d}; {date}",
        f"From: {encode_header(name)} <{addr}>",
        f"To: {to}",
        f"Subject: {subject}",
        f"Date: {date}",
        f"Message-ID: <{rng.randrange(10**12)}.{rng.randrange(10**6)}@{msgid_domain}>",
        "MIME-Version: 1.0",
    ]
    lines.extend(extra)
    return lines


def html_of(text: str, spam: bool, rng) -> str:
    paras = "".join(f"<p>{s}</p>\n" for s in text.split(". ") if s)
    if spam:
        link = f"http://{rng.choice(SPAM_DOMAINS)}/offer?id={rng.randrange(10**6)}"
        return (f"<html><body bgcolor=\"#ffffff\"><font face=\"Arial\" size=\"4\" color=\"red\">"
                f"<b>{rng.choice(['LIMITED OFFER', 'ACT NOW', 'CONGRATULATIONS'])}</b></font>\n"
                f"{paras}<a href=\"{link}\"><img src=\"http://img.{rng.choice(SPAM_DOMAINS)}/b.gif\" "
                f"alt=\"click here\"></a>\n<p><a href=\"{link}\">Click here</a> to "
                f"unsub<!-- x7 -->scribe.</p></body></html>\n")
    return f"<html><body>\n{paras}<p>Best regards</p>\n</body></html>\n"


def qp(text: str, charset: str = "utf-8") -> str:
    return quopri.encodestring(text.encode(charset)).decode("ascii")


def b64(data: bytes) -> str:
    raw = base64.b64encode(data).decode("ascii")
    return "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))


def compose(i: int, spam: bool, date: str, rng: random.Random) -> bytes:
    """One message; the shape is chosen by the message number so every shape occurs."""
    pool = SPAM_SENTENCES if spam else HAM_SENTENCES
    cross = HAM_SENTENCES if spam else SPAM_SENTENCES
    topic = rng.choice(list(pool))
    body = paragraph(rng, pool, topic, rng.randrange(1, 5), cross)
    if spam:
        subject = fill(rng.choice(SPAM_SUBJECTS), rng)
        # some spam comes from hijacked accounts at ordinary domains, and some is personalised
        sender = person(rng, HAM_DOMAINS if rng.random() < 0.25 else SPAM_DOMAINS)
        personal = rng.random() < 0.3
        to = "Sam Reader <sam.reader@example.org>" if personal else "undisclosed-recipients:;"
        msgid_domain = sender[1].split("@")[1]
        if personal:
            body = f"Hi Sam,\n\n{body}\n"
        url = f"http://{rng.choice(SPAM_DOMAINS)}/go/{rng.randrange(10**5)}"
        body = f"{body}\n\nVisit {url} now!\nTo unsubscribe reply REMOVE.\n"
    else:
        subject = fill(rng.choice(HAM_SUBJECTS[topic]), rng)
        shop = topic == "commerce"
        sender = person(rng, SHOP_DOMAINS if shop else HAM_DOMAINS)
        to = "Sam Reader <sam.reader@example.org>"
        msgid_domain = sender[1].split("@")[1]
        greeting = "Dear customer" if shop else ("Hi Sam" if rng.random() < 0.8 else "Hello")
        body = f"{greeting},\n\n{body}\n\n{sender[0].split()[0]}\n"
        if shop:
            body += (f"\nManage your account at https://{sender[1].split('@')[1]}/account "
                     "or click here to unsubscribe.\n")
    shape = i % 12
    extra: list[str] = []
    boundary = f"----=_Part_{i}_{rng.randrange(10**8)}"
    if shape == 0:          # plain, 7bit
        extra = ["Content-Type: text/plain; charset=us-ascii", "Content-Transfer-Encoding: 7bit"]
        payload = body.encode("ascii", "replace").decode("ascii")
    elif shape == 1:        # plain, quoted-printable utf-8 (with non-ASCII)
        body = body.replace("Hi Sam", "Hi Sam \u2014 merci beaucoup").replace("Best", "Beste Grüße")
        extra = ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: quoted-printable"]
        payload = qp(body)
    elif shape == 2:        # multipart/alternative text + html
        extra = [f'Content-Type: multipart/alternative; boundary="{boundary}"']
        payload = (f"This is a multi-part message in MIME format.\n\n--{boundary}\n"
                   "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n"
                   f"{body}\n--{boundary}\nContent-Type: text/html; charset=utf-8\n"
                   f"Content-Transfer-Encoding: quoted-printable\n\n{qp(html_of(body, spam, rng))}\n"
                   f"--{boundary}--\n")
    elif shape == 3:        # HTML only, base64
        extra = ["Content-Type: text/html; charset=utf-8", "Content-Transfer-Encoding: base64"]
        payload = b64(html_of(body, spam, rng).encode("utf-8"))
    elif shape == 4:        # ISO-8859-1, quoted-printable, encoded subject
        body = body.replace("Hi Sam", "Hi Sam, ça va?").replace("the", "thé", 1)
        subject = encode_header(subject + (" \u00e9t\u00e9" if not spam else " \u00a3\u00a3\u00a3"),
                                "iso-8859-1")
        extra = ["Content-Type: text/plain; charset=iso-8859-1", "Content-Transfer-Encoding: quoted-printable"]
        payload = qp(body, "iso-8859-1")
    elif shape == 5:        # attachment (multipart/mixed)
        name = "report.pdf" if not spam else rng.choice(["invoice.zip", "statement.pdf.exe", "offer.doc"])
        blob = bytes(rng.randrange(256) for _ in range(300))
        ctype = "application/pdf" if name.endswith(".pdf") else "application/octet-stream"
        extra = [f'Content-Type: multipart/mixed; boundary="{boundary}"']
        payload = (f"--{boundary}\nContent-Type: text/plain; charset=utf-8\n\n{body}\n"
                   f"--{boundary}\nContent-Type: {ctype}; name=\"{name}\"\n"
                   f"Content-Disposition: attachment; filename=\"{name}\"\n"
                   f"Content-Transfer-Encoding: base64\n\n{b64(blob)}\n--{boundary}--\n")
    elif shape == 6:        # KOI8-R (ham) / Windows-1252 smart quotes (spam), base64 body
        if spam:
            body = body.replace("Click", "\u201cClick\u201d").replace("!", "\u2026!", 1)
            charset = "windows-1252"
        else:
            body = body + "\n\u0421\u043f\u0430\u0441\u0438\u0431\u043e, \u0434\u043e \u0432\u0441\u0442\u0440\u0435\u0447\u0438!\n"
            charset = "koi8-r"
        extra = [f"Content-Type: text/plain; charset={charset}", "Content-Transfer-Encoding: base64"]
        payload = b64(body.encode(charset, "replace"))
    elif shape == 7:        # Shift_JIS greeting, 8bit
        body = body + "\n\u3088\u308d\u3057\u304f\u304a\u9858\u3044\u3057\u307e\u3059\u3002\n"
        extra = ["Content-Type: text/plain; charset=shift_jis", "Content-Transfer-Encoding: 8bit"]
        payload = body.encode("shift_jis", "replace").decode("latin-1")
    elif shape == 8:        # malformed: header line without colon, and a wrong charset label
        extra = ["Content-Type: text/plain; charset=utf-8", "X-Broken-Header this line has no colon"]
        payload = body.replace("Hi Sam", "Hi Sam, d\u00e9j\u00e0 vu").encode("latin-1", "replace").decode("latin-1")
    elif shape == 9:        # malformed: closing MIME boundary missing, unknown charset
        extra = [f'Content-Type: multipart/mixed; boundary="{boundary}"']
        payload = (f"--{boundary}\nContent-Type: text/plain; charset=x-unknown-charset\n\n{body}\n")
    elif shape == 10:       # forwarded message (message/rfc822) inside multipart/mixed
        inner = "\n".join(headers(rng, person(rng, SPAM_DOMAINS if spam else HAM_DOMAINS), to,
                                  fill(rng.choice(SPAM_SUBJECTS if spam else HAM_SUBJECTS["work"]), rng),
                                  date, msgid_domain, ["Content-Type: text/plain; charset=us-ascii"]))
        extra = [f'Content-Type: multipart/mixed; boundary="{boundary}"']
        payload = (f"--{boundary}\nContent-Type: text/plain\n\nForwarding this, see below.\n"
                   f"--{boundary}\nContent-Type: message/rfc822\n\n{inner}\n\n"
                   f"{paragraph(rng, pool, topic, 3)}\n--{boundary}--\n")
    else:                   # shape 11: raw 8-bit UTF-8 in the Subject header, no MIME headers at all
        subject = subject + (" \u2014 d\u00e9tails" if not spam else " \u2605\u2605\u2605")
        extra = []
        payload = body
    lines = headers(rng, sender, to, subject, date, msgid_domain, extra)
    text = "\n".join(lines) + "\n\n" + payload
    if not text.endswith("\n"):
        text += "\n"
    # latin-1 keeps the bytes of 8bit payloads prepared above; other text is UTF-8.
    if shape in (7, 8):
        head, _, tail = text.partition("\n\n")
        return head.encode("utf-8") + b"\n\n" + tail.encode("latin-1")
    return text.encode("utf-8")


def generate(out: Path, seed: int = 2026, n_ham: int = 130, n_spam: int = 110) -> list[Path]:
    rng = random.Random(seed)
    labels = ["ham"] * n_ham + ["spam"] * n_spam
    rng.shuffle(labels)
    start = dt.datetime(2026, 1, 5, 8, 0, tzinfo=dt.timezone.utc)
    if out.exists():
        shutil.rmtree(out)
    written = []
    moment = start
    for i, label in enumerate(labels, 1):
        moment += dt.timedelta(minutes=rng.randrange(30, 2000))
        date = moment.strftime("%a, %d %b %Y %H:%M:%S +0000")
        raw = compose(i, label == "spam", date, rng)
        path = out / label / f"{i:04d}.eml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "corpora" / "sample")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    written = generate(args.out, args.seed)
    print(f"wrote {len(written)} messages to {args.out}")


if __name__ == "__main__":
    main()
