"""What the conditional Agenvoy utility tools cost an invocation, and their chat formatting.

- Availability, per invocation (`catalog/bindings.verdicts`, asked before every snapshot): the whole
  catalog's conditions vs the catalog without the seven new tools, same run, interleaved; for a home
  with no tooldeck.toml, and for one that configures `[models] image/tts` and an enabled Telegram bot
  whose token is in the (encrypted-file) secrets store.
- `telegram_parts` (sanitize to Telegram's HTML, cut in 4,096-unit parts) and `discord_parts` on a 40 KB
  message vs `HTMLParser.feed` of the same text alone, the parser it is built on.

    python -m bench.agenvoy_utils_bench
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import tooldeck
from bench.timing import median_us, report
from tooldeck.catalog import bindings
from tooldeck.catalog.probes import HOST_PROBES
from tooldeck.core.descriptors import AvailabilityContext

NEW = {"builtin:store_secret", "builtin:generate_image", "builtin:generate_audio", "builtin:list_chatbot",
       "builtin:send_to_chatbot", "builtin:public_api_list", "builtin:html_template"}
CONFIG = """[models]
image = "pics"
tts = "voice"
[models.pics]
model = "gpt-image-1"
[models.voice]
model = "gpt-4o-mini-tts"
[chatbots.telegram]
enabled = true
targets = [{ id = "1", name = "me" }]
"""


def conditions(home: Path, label: str) -> None:
    rt = tooldeck.Runtime(home, records=False)
    offered = rt.snapshots.catalog.offered()
    without = tuple(d for d in offered if str(d.id) not in NEW)
    ctx = AvailabilityContext(scene="chat", headless=False, provider="openai", run_id="r", probes=HOST_PROBES,
                              home=home)
    samples: dict[str, list[float]] = {"all tools": [], "without the new": []}
    for _ in range(25):
        for name, tools in (("all tools", offered), ("without the new", without)):
            start = time.perf_counter()
            for _ in range(200):
                bindings.verdicts(tools, rt.profile, ctx)
            samples[name].append((time.perf_counter() - start) / 200 * 1e6)
    rt.close()
    print(f" availability per invocation, {label}:")
    report([(k, statistics.median(v)) for k, v in samples.items()], "without the new")


def formatting() -> None:
    from tooldeck.builtins.chat_format import discord_parts, telegram_parts

    message = ("<h2>Report</h2><p>Numbers <b>up</b> &amp; <i>down</i> <a href='https://example.org'>link</a></p>"
               "<ul><li>one</li><li>two</li></ul>\n" + "plain words, " * 40 + "\n") * 60

    def parse_only() -> None:
        parser = HTMLParser()
        parser.feed(message)
        parser.close()

    print(f" chat formatting of a {len(message):,}-character message:")
    report([("HTMLParser.feed", median_us(parse_only, 5)),
            ("telegram_parts", median_us(lambda: telegram_parts(message), 5)),
            ("discord_parts", median_us(lambda: discord_parts(message), 5))], "HTMLParser.feed")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TOOLDECK_SECRETS_DIR"] = str(Path(tmp) / "secrets")
        os.environ["TOOLDECK_SECRETS_BACKEND"] = "file"
        bare = Path(tmp) / "bare"
        conditions(bare, "home without tooldeck.toml")
        configured = Path(tmp) / "configured"
        configured.mkdir()
        (configured / "tooldeck.toml").write_text(CONFIG)
        from tooldeck.secrets import SecretStore

        SecretStore().set("TELEGRAM_BOT_TOKEN", "123:abc")
        conditions(configured, "media models and a Telegram bot configured")
    formatting()


if __name__ == "__main__":
    main()
