"""Images in the wire shapes: any turn whose results carry images renders into every format so that the
validator finds nothing and the images come back, in order, in each format's own place; the validators
name what a provider would refuse (an image in a Chat tool message, a bad data URL, a media type the
APIs do not take, an Anthropic image over 5 MB of base64); replay reads images only from copies inside
the run's workspace."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builtins.agenvoy_files.support import PNG
from tests.conftest import MakeRuntime
from tooldeck.core.results import ToolImage, ToolOutput
from tooldeck.protocols import FORMATS, render, validate
from tooldeck.protocols.common import ReplayCall, ReplayTurn
from tooldeck.records.replay import replay

MIMES = ["image/png", "image/jpeg", "image/gif", "image/webp"]


def images_of(fmt: str, messages: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Every image of a rendered history, in order, from the one place each format puts them."""
    out: list[tuple[str, bytes]] = []

    def from_url(url: str) -> tuple[str, bytes]:
        head, data = url.split(",", 1)
        return head[5:].split(";")[0], base64.b64decode(data)

    for m in messages:
        if fmt == "anthropic" and m["role"] == "user":
            for block in m["content"]:
                for b in block.get("content") if isinstance(block.get("content"), list) else []:
                    if b["type"] == "image":
                        out.append((b["source"]["media_type"], base64.b64decode(b["source"]["data"])))
        elif fmt in ("openai", "mistral") and m["role"] == "user" and isinstance(m["content"], list):
            out.extend(from_url(p["image_url"]["url"]) for p in m["content"] if p["type"] == "image_url")
        elif fmt == "openai_responses" and m.get("type") == "function_call_output" and isinstance(m["output"], list):
            out.extend(from_url(p["image_url"]) for p in m["output"] if p["type"] == "input_image")
        elif fmt == "gemini" and m["role"] == "user":
            out.extend((p["inlineData"]["mimeType"], base64.b64decode(p["inlineData"]["data"]))
                       for p in m["parts"] if "inlineData" in p)
    return out


_IMAGE = st.builds(lambda mime, data, n: ToolImage(f"tool-results/images/{n}.png", mime, data),
                   st.sampled_from(MIMES), st.binary(min_size=1, max_size=64), st.integers(0, 99))
_CALL = st.tuples(st.text(max_size=20), st.booleans(), st.lists(_IMAGE, max_size=3))


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.lists(st.lists(_CALL, min_size=1, max_size=4), min_size=1, max_size=3))
def test_any_turns_with_images_render_valid_in_every_format(turns: list[list[tuple[str, bool, list[ToolImage]]]]
                                                            ) -> None:
    replay_turns = []
    expected: list[tuple[str, bytes]] = []
    for t, calls in enumerate(turns):
        replayed = []
        for i, (text, is_error, images) in enumerate(calls):
            replayed.append(ReplayCall(f"c{t:03d}x{i:03d}z", "read_files", {"files": []}, text, is_error, None,
                                       tuple(images)))
            expected.extend((img.mime, img.data) for img in images)
        replay_turns.append(ReplayTurn(tuple(replayed)))
    for fmt in FORMATS:
        messages = render(replay_turns, fmt)
        assert validate(messages, fmt) == [], fmt
        assert images_of(fmt, messages) == expected, fmt


def _turn(*images: ToolImage, text: str = "ok") -> list[ReplayTurn]:
    return [ReplayTurn((ReplayCall("callAAAA1", "read_files", {}, text, False, None, images),))]


def test_validators_name_what_a_provider_refuses() -> None:
    png = ToolImage("tool-results/images/a.png", "image/png", PNG)
    chat = render(_turn(png), "openai")
    chat[1]["content"] = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    assert [v.code for v in validate(chat, "openai")] == ["tool_content_invalid"]
    chat = render(_turn(png), "openai")
    chat[2]["content"][1]["image_url"]["url"] = "data:image/tiff;base64,AAAA"
    assert [v.code for v in validate(chat, "openai")] == ["image_invalid"]

    claude = render(_turn(png), "anthropic")
    claude[1]["content"][0]["content"][1]["source"]["media_type"] = "image/bmp"
    assert [v.code for v in validate(claude, "anthropic")] == ["image_invalid"]
    claude[1]["content"][0]["content"][1]["source"].update(media_type="image/png", data="A" * (5 * 1024 * 1024 + 4))
    [too_large] = validate(claude, "anthropic")
    assert too_large.code == "image_too_large" and "image exceeds 5 MB maximum" in too_large.message
    claude[1]["content"][0]["content"][1] = {"type": "tool_use", "id": "x"}
    assert [v.code for v in validate(claude, "anthropic")] == ["tool_result_invalid"]

    responses = render(_turn(png), "openai_responses")
    responses[1]["output"][1]["image_url"] = "file:///etc/passwd"
    assert [v.code for v in validate(responses, "openai_responses")] == ["image_invalid"]
    responses[1]["output"][1] = {"type": "output_text", "text": "x"}
    assert [v.code for v in validate(responses, "openai_responses")] == ["tool_output_invalid"]

    gemini = render(_turn(png), "gemini")
    gemini[1]["parts"][2]["inlineData"]["data"] = ""
    assert [v.code for v in validate(gemini, "gemini")] == ["image_invalid"]


def test_a_result_without_text_sends_its_images_alone() -> None:
    png = ToolImage("tool-results/images/a.png", "image/png", PNG)
    claude = render(_turn(png, text=""), "anthropic")
    assert [b["type"] for b in claude[1]["content"][0]["content"]] == ["image"]
    responses = render(_turn(png, text=""), "openai_responses")
    assert [p["type"] for p in responses[1]["output"]] == ["input_image"]
    for fmt in FORMATS:
        assert validate(render(_turn(png, text=""), fmt), fmt) == [], fmt


def test_replay_reads_images_only_from_copies_inside_the_workspace(make_runtime: MakeRuntime, tmp_path: Path
                                                                   ) -> None:
    rt = make_runtime()
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG)

    @rt.tool(extension_id="pics", name="show")
    def show(path: str) -> ToolOutput:
        """Show an image."""
        return ToolOutput("here", images=[ToolImage(path, "image/png", PNG)])

    root = Path(rt.run_state("r1").workspace_root)
    (root / "tool-results/images").mkdir(parents=True)
    (root / "tool-results/images/kept.png").write_bytes(PNG)
    escape = "../" * len(root.relative_to(tmp_path).parts) + "outside.png"
    inv = rt.invocation(run_id="r1")
    results = inv.run([{"id": "c1", "name": "show", "arguments": {"path": "tool-results/images/kept.png"}},
                       {"id": "c2", "name": "show", "arguments": {"path": escape}},
                       {"id": "c3", "name": "show", "arguments": {"path": "tool-results/images/gone.png"}}])
    # the live path sends what the tool gave
    assert [(r.is_error, r.content, len(r.images)) for r in results] == [(False, "here", 1)] * 3
    for fmt in FORMATS:
        messages = replay(rt.recorder, inv.id, fmt, workspace=root)
        assert validate(messages, fmt) == [], fmt
        assert images_of(fmt, messages) == [("image/png", PNG)], fmt  # kept only: not outside, not missing
