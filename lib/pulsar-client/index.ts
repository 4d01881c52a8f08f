/**
 * A client of Apache Pulsar's binary protocol in TypeScript, with no native
 * parts: producers (batching off), consumers (Exclusive, Shared, Failover),
 * lookup with redirects and proxies, token authentication, TLS, batches and
 * compressed messages from other clients, reconnection with backoff.
 * Independent of toolbridge: nothing here imports from outside this folder.
 */
export { PulsarClient, type ClientOptions } from './client.ts'
export type { ClientLogger } from './client-context.ts'
export { Producer, type ProducerOptions, type SendOptions, type MessageId } from './producer.ts'
export { Consumer, type ConsumerOptions, type Message, type SubscriptionType } from './consumer.ts'
export { PulsarError, PulsarServerError, isPulsarError, SERVER_ERRORS, CLIENT_ERROR_CODES } from './errors.ts'
export type { Authentication } from './connection.ts'
