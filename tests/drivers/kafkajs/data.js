'use strict'
/**
 * kafkajs 2.2.4 and cluster mode's data plane (issue 27): one idempotent producer sends COUNT records (value
 * "v<i>" to partition i % partitions), waits in phase `produced` (the test kills a partition leader), sends
 * COUNT more with the same producer, waits in `produced-again`, then a consumer group member reads the topic
 * from the beginning and reports every record in phase `consumed`.
 *
 * Usage: node data.js BOOTSTRAP(,BOOTSTRAP...) TOPIC COUNT GROUP. Events go to stdout as JSON lines.
 */
const readline = require('readline')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, countText, group] = process.argv.slice(2)
const count = Number(countText)
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n')
}

async function phase(name, fields = {}) {
  emit('phase', { phase: name, ...fields })
  const { done } = await lines.next()
  if (done) process.exit(3)
}

const kafka = new Kafka({
  clientId: 'kafkajs-data',
  brokers: bootstrap.split(','),
  logLevel: logLevel.ERROR,
  logCreator: () => ({ namespace, level, log }) =>
    process.stderr.write(JSON.stringify({ namespace, level, ...log }) + '\n'),
  retry: { retries: 20, initialRetryTime: 200, maxRetryTime: 2000 },
})

async function send(producer, partitions, from, to) {
  const out = []
  for (let i = from; i < to; i++) { // one record a request: each acknowledgement names its offset
    const [meta] = await producer.send({
      topic, acks: -1, messages: [{ value: `v${i}`, partition: i % partitions }],
    })
    out.push([meta.partition, Number(meta.baseOffset)])
  }
  return out
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
  await admin.disconnect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await phase('produced', { offsets: await send(producer, partitions, 0, count) })
  await phase('produced-again', { offsets: await send(producer, partitions, count, 2 * count) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: group })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const records = []
  let resolve
  const all = new Promise(r => { resolve = r })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      records.push([partition, Number(message.offset), message.value.toString()])
      if (records.length >= 2 * count) resolve()
    },
  })
  await Promise.race([all, new Promise(r => setTimeout(r, 60000))])
  await consumer.disconnect()
  await phase('consumed', { records })
  emit('done')
  process.exit(0) // stdin stays open otherwise
}

main().catch(e => {
  emit('error', { where: 'main', error: e.name, message: e.message })
  process.exit(1)
})
