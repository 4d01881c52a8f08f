"""
Sends messages the way other Pulsar clients do, batched and compressed, with
the native Python client that TrustGraph's Pulsar backend uses
(pulsar-client, in TrustGraph's virtual environment). The Pulsar tests
read them with the project's own client.

  pulsar_batch_producer.py <service-url> <topic> <LZ4|ZLib|ZSTD|SNAPPY|NONE> <count>

Message i has the payload "message <i> " repeated 20 times and the property n=<i>.
"""

import sys

import pulsar

service_url, topic, compression, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
producer = client.create_producer(
    topic,
    batching_enabled=True,
    batching_max_messages=count,
    batching_max_publish_delay_ms=200,
    compression_type=getattr(pulsar.CompressionType, compression),
)
failures = []
for i in range(count):
    producer.send_async(
        (f"message {i} " * 20).encode(),
        lambda result, _id: failures.append(result) if result != pulsar.Result.Ok else None,
        properties={"n": str(i)},
    )
producer.flush()
client.close()
if failures:
    sys.exit(f"{len(failures)} sends failed: {failures[0]}")
