"""`tooldeck run`'s answerer of `ask_user`: the questions on stderr, the answers read from stdin.

- free text: `[?] question` (detail lines indented under it), then `> `; the line as typed;
- secret: `[?] question (secret, not echoed): `; echo is off while it is typed when stdin is a
  terminal; the answer is never written anywhere (the records keep a mask);
- a choice: the options numbered `1) …`; answer with a number or the option's text; a multi-select takes
  several numbers separated by commas (`1, 3`); an answer that fits no option asks again;
- end of input (Ctrl-D, or a closed pipe) declines the questions (`ask_user.declined`).

Lines are read by one daemon thread for the whole process and handed to the event loop, so a call that
is cancelled or times out stops waiting at once (the line typed next goes to the next question).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

from tooldeck.builtins.ask_user import Answer, AskRequest, Question

_EOF = None


class StdinLines:
    """Lines of `stream`, read by a daemon thread, awaited on the loop that first asks."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._queue: asyncio.Queue[str | None] | None = None
        self._started = False

    def _start(self) -> asyncio.Queue[str | None]:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if not self._started:
            self._started = True
            loop, queue = asyncio.get_running_loop(), self._queue

            def read() -> None:
                while True:
                    line = self.stream.readline()
                    loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\r\n") if line else _EOF)
                    if not line:
                        return

            threading.Thread(target=read, name="tooldeck-ask-stdin", daemon=True).start()
        return self._queue

    async def next(self) -> str | None:
        """The next line, or None at end of input (and every time after it)."""
        queue = self._start()
        line = await queue.get()
        if line is _EOF:
            queue.put_nowait(_EOF)
        return line


@contextlib.contextmanager
def _no_echo(stream: TextIO) -> Iterator[None]:
    """Echo off on a terminal while a secret is typed; nothing to do for a pipe."""
    try:
        import termios

        fd = stream.fileno()
        if not stream.isatty():
            raise OSError
        old = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    new = list(old)
    new[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSADRAIN, new)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def _choice(q: Question, line: str) -> Answer | None:
    """The options a line picks (numbers or an option's exact text), or None when it fits none."""
    line = line.strip()
    if not line:
        return None
    if line in q.options and not q.multi_select:
        return line
    picked: list[str] = []
    for token in (t.strip() for t in line.split(",")):
        if token in q.options:
            picked.append(token)
        elif token.isdigit() and 1 <= int(token) <= len(q.options):
            picked.append(q.options[int(token) - 1])
        else:
            return None
    if q.multi_select:
        return list(dict.fromkeys(picked))
    return picked[0] if len(picked) == 1 else None


class TerminalAnswerer:
    """The `AskUser` of `tooldeck run`. `pause(True/False)` brackets each prompt (the live view steps aside)."""

    def __init__(self, stdin: TextIO | None = None, err: TextIO | None = None,
                 pause: Callable[[bool], None] | None = None) -> None:
        self.lines = StdinLines(stdin if stdin is not None else sys.stdin)
        self.err = err if err is not None else sys.stderr
        self.pause = pause

    def _say(self, text: str) -> None:
        self.err.write(text)
        self.err.flush()

    async def __call__(self, request: AskRequest) -> list[Answer] | None:
        if self.pause is not None:
            self.pause(True)
        try:
            self._say(f"[?] {request.state.objective}\n" if len(request.questions) > 1 else "")
            answers: list[Answer] = []
            for q in request.questions:
                answer = await self._ask(q)
                if answer is None:
                    self._say("\n(no answer: the questions were declined)\n")
                    return None
                answers.append(answer)
            return answers
        finally:
            if self.pause is not None:
                self.pause(False)

    async def _ask(self, q: Question) -> Answer | None:
        detail = "".join(f"    {line}\n" for line in (q.detail or "").splitlines())
        if q.kind == "secret":
            self._say(f"[?] {q.question}\n{detail}(secret, not echoed): ")
            with _no_echo(self.lines.stream):
                line = await self.lines.next()
            self._say("\n")
            return line
        if q.kind == "text":
            self._say(f"[?] {q.question}\n{detail}> ")
            return await self.lines.next()
        how = "several: numbers separated by commas" if q.multi_select else "one number"
        options = "".join(f"  {i}) {o}\n" for i, o in enumerate(q.options, 1))
        self._say(f"[?] {q.question} ({how})\n{detail}{options}> ")
        while True:
            line = await self.lines.next()
            if line is None:
                return None
            picked = _choice(q, line)
            if picked is not None:
                return picked
            self._say(f"  not an option; answer with {how} from 1 to {len(q.options)}\n> ")
