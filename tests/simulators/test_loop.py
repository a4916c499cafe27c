"""The background loop: an asyncio loop on a thread of its own, opened, called into and closed cleanly."""

from __future__ import annotations

import asyncio
import threading

import pytest

from simulators.loop import BackgroundLoop


class Server:
    """Records where each of its methods ran."""

    def __init__(self, fail_open: bool = False, fail_close: bool = False) -> None:
        self.fail_open = fail_open
        self.fail_close = fail_close
        self.threads: dict[str, str] = {}
        self.closed = False

    async def serve(self) -> str:
        self.threads["serve"] = threading.current_thread().name
        await asyncio.sleep(0)
        if self.fail_open:
            raise OSError("address in use")
        return "bound"

    def links(self) -> list[str]:
        self.threads["links"] = threading.current_thread().name
        return ["link"]

    async def aclose(self) -> None:
        self.threads["aclose"] = threading.current_thread().name
        self.closed = True
        if self.fail_close:
            raise ConnectionResetError("half-dead session")


def test_the_server_is_opened_called_and_closed_on_the_loop_thread_and_the_thread_ends():
    server, background = Server(), BackgroundLoop("sim-test")
    assert background.start(server.serve, server.aclose) == "bound"
    assert background.running
    assert background.call(server.links) == ["link"]
    thread = next(t for t in threading.enumerate() if t.name == "sim-test")
    background.stop(server.aclose)
    assert server.threads == {"serve": "sim-test", "links": "sim-test", "aclose": "sim-test"}
    assert server.closed and not background.running and not thread.is_alive()
    background.stop(server.aclose)  # a second stop does nothing


def test_a_failed_opening_is_closed_again_and_raised():
    server, background = Server(fail_open=True), BackgroundLoop("sim-test")
    with pytest.raises(OSError, match="address in use"):
        background.start(server.serve, server.aclose)
    assert server.closed and not background.running
    assert not any(t.name == "sim-test" for t in threading.enumerate())


def test_an_error_while_closing_is_logged_and_the_loop_still_stops(caplog):
    server, background = Server(fail_close=True), BackgroundLoop("sim-test")
    background.start(server.serve)
    background.stop(server.aclose)
    assert not background.running
    assert "sim-test: error while stopping" in caplog.text


def test_a_call_from_the_loop_thread_or_without_a_loop_runs_at_once():
    server, background = Server(), BackgroundLoop("sim-test")
    assert background.call(server.links) == ["link"]  # not started: called here
    assert server.threads["links"] == threading.current_thread().name
    background.start(server.serve)

    async def from_the_loop() -> list[str]:
        return background.call(server.links)  # would wait for itself if it went through the loop

    assert background.run(from_the_loop()) == ["link"]
    with pytest.raises(RuntimeError, match="already started"):
        background.start(server.serve)
    background.stop()
    assert background.start(server.serve) == "bound"  # a stopped loop may be started again
    background.stop()
