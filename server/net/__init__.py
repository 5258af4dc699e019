"""The Kafka listeners' edge: one asyncio Protocol per connection (`network.py`: framing, replies in order,
backpressure, connection limits), the dispatcher (`dispatch.py`: header peek, version checks, decode, the
handler table, fast lanes, encode) and Kafka's listener settings parsed (`listeners.py`)."""
