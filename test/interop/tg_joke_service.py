"""
TrustGraph's own joke service (trustgraph-flow), on queues every backend
accepts. As shipped, its DynamicToolService hardcodes Pulsar URIs
(non-persistent://tg/request/<topic>), which TrustGraph's RabbitMQ and Kafka
backends reject; this subclass only swaps those for request:tg:<topic> /
response:tg:<topic>, the rest is TrustGraph's code.
"""

from trustgraph.base.async_processor import AsyncProcessor
from trustgraph.schema import ToolServiceRequest, ToolServiceResponse
from trustgraph.tool_service.joke.service import Processor, default_ident


class LogicalQueueJokeService(Processor):

    async def start(self):
        await AsyncProcessor.start(self)
        self._producer_handle = await self.sender_pool.add_producer(
            topic=f"response:tg:{self._topic}",
            schema=ToolServiceResponse,
        )

        async def handler(message):
            await self.on_request(message, None, None)

        self._consumer_reg = await self.receiver_pool.add_consumer(
            topic=f"request:tg:{self._topic}",
            subscription=f"{self.id}-request",
            schema=ToolServiceRequest,
            handler=handler,
        )


if __name__ == "__main__":
    LogicalQueueJokeService.launch(default_ident, __doc__)
