"""A test double for the simulator transport: it records what a personality writes and answers its
questions from a script; and a `Login` that drives a personality as one CLI session. Shared by the
FOS and MDS personality tests."""

import asyncio

from simulators.personality import Session


class RecordingConsole:
    """Collects output; answers confirmations from a script; pages like the framework (Q stops)."""

    def __init__(self, answers=(), pager_answers=(), page_lines=24, pager_prompt="--More--"):
        self.out = []
        self.answers = list(answers)
        self.pager_answers = list(pager_answers)
        self.page_lines = page_lines
        self.pager_prompt = pager_prompt
        self.questions = []
        self.applied_count = 0

    def write(self, text):
        self.out.append(text)

    async def ask(self, question):
        self.questions.append(question)
        self.out.append(question)
        return self.answers.pop(0)

    async def page(self, text):
        lines = text.splitlines(keepends=True)
        size = self.page_lines - 1
        for start in range(0, len(lines), size):
            self.out.append("".join(lines[start : start + size]))
            if start + size >= len(lines):
                break
            self.out.append(self.pager_prompt)
            if self.pager_answers.pop(0).lower().startswith("q"):
                break

    async def applied(self):
        self.applied_count += 1

    async def delay(self, seconds):
        return None

    @property
    def text(self):
        return "".join(self.out)


class Login:
    """One CLI session to a personality under test, with its own Session as the framework gives each
    connection (zoning transactions and locks belong to a session). Calling it runs one command line
    and returns the RecordingConsole, with `keep` (the session goes on) and `prompt_after`."""

    def __init__(self, personality, session_id=1, username="admin", paging=True):
        self.personality = personality
        self.session = Session(username=username, transport="ssh", id=session_id, paging=paging)

    def __call__(self, line, **console_args):
        console = RecordingConsole(pager_prompt=self.personality.pager_prompt, **console_args)
        console.keep = asyncio.run(self.personality.execute(self.session, console, line))
        console.prompt_after = self.personality.prompt(self.session)
        return console

    def script(self, lines):
        return "".join(self(line).text for line in lines)

    def end(self):
        """The session ends (logout, EOF, a fault): what the framework tells the personality."""
        self.personality.session_ended(self.session)
