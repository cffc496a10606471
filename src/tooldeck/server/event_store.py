"""A bounded in-memory `EventStore` for the streamable-HTTP transport: SSE priming events, the `retry`
hint and resuming a dropped stream with `Last-Event-ID` (SEP-1699). Old streams and events fall off the end;
a client that asks for an event no longer kept gets nothing replayed and re-sends its request."""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

RETRY_INTERVAL_MS = 1_000
"""How long a client waits before reconnecting a dropped SSE stream."""


class MemoryEventStore(EventStore):
    def __init__(self, max_streams: int = 512, max_events_per_stream: int = 128) -> None:
        self.max_streams = max_streams
        self.max_events_per_stream = max_events_per_stream
        self._streams: OrderedDict[StreamId, deque[tuple[EventId, JSONRPCMessage | None]]] = OrderedDict()
        self._stream_of: dict[EventId, StreamId] = {}
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque()
            while len(self._streams) > self.max_streams:
                _, dropped = self._streams.popitem(last=False)
                for old_id, _ in dropped:
                    self._stream_of.pop(old_id, None)
        else:
            self._streams.move_to_end(stream_id)
        events.append((event_id, message))
        self._stream_of[event_id] = stream_id
        while len(events) > self.max_events_per_stream:
            old_id, _ = events.popleft()
            self._stream_of.pop(old_id, None)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        stream_id = self._stream_of.get(last_event_id)
        if stream_id is None:
            return None
        after = False
        for event_id, message in list(self._streams.get(stream_id, ())):
            if after and message is not None:
                await send_callback(EventMessage(message, event_id))
            elif event_id == last_event_id:
                after = True
        return stream_id
