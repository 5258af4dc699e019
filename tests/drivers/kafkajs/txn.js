'use strict'
/**
 * kafkajs 2.2.4 and cluster-mode transactions (issue 27 item 3): a transactional producer commits, aborts
 * and commits again, each transaction COUNT records (value "<outcome>-<n>-<i>" to partition i % partitions),
 * then reports `transactions` and exits. The test reads the topic back with read_committed consumers.
 *
 * Usage: node txn.js BOOTSTRAP(,BOOTSTRAP...) TOPIC TRANSACTIONAL_ID COUNT. Events go to stdout as JSON lines.
 */
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, transactionalId, countText] = process.argv.slice(2)
const count = Number(countText)

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n')
}

const kafka = new Kafka({
  clientId: 'kafkajs-txn',
  brokers: bootstrap.split(','),
  logLevel: logLevel.ERROR,
  logCreator: () => ({ namespace, level, log }) =>
    process.stderr.write(JSON.stringify({ namespace, level, ...log }) + '\n'),
  retry: { retries: 20, initialRetryTime: 200, maxRetryTime: 2000 },
})

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
  await admin.disconnect()
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const outcomes = ['commit', 'abort', 'commit']
  for (let n = 0; n < outcomes.length; n++) {
    const txn = await producer.transaction()
    const messages = []
    for (let i = 0; i < count; i++) messages.push({ value: `${outcomes[n]}-${n}-${i}`, partition: i % partitions })
    await txn.send({ topic, acks: -1, messages })
    if (outcomes[n] === 'commit') await txn.commit()
    else await txn.abort()
    emit('transaction', { n, outcome: outcomes[n] })
  }
  await producer.disconnect()
  emit('phase', { phase: 'transactions' })
  emit('done')
  process.exit(0)
}

main().catch(e => {
  emit('error', { where: 'main', error: e.name, message: e.message })
  process.exit(1)
})
