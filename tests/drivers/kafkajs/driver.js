'use strict'
/**
 * kafkajs 2.2.4 group scenarios against the coordinator, all members as consumers in this one process.
 *
 * Usage: node driver.js (group3|admin|control) BOOTSTRAP TOPIC GROUP [CONTROL_URL]. Events go to stdout as
 * JSON lines; at each
 * `phase` event the driver waits for a line on stdin while the test checks the server side. kafkajs logs go
 * to stderr (its default logger writes to stdout, which is the test's channel). kafkajs has no static
 * membership (it never sends a group.instance.id), so there is no static scenario here.
 */
const readline = require('readline')
const { Kafka, logLevel, AssignerProtocol } = require('kafkajs')

const [scenario, bootstrap, topic, group, controlUrl] = process.argv.slice(2)
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n')
}

async function phase(name, fields = {}) {
  emit('phase', { phase: name, ...fields })
  const { done } = await lines.next()
  if (done) {
    emit('error', { where: name, error: 'EOF', message: 'the test closed stdin' })
    process.exit(3)
  }
}

function errorOf(e) {
  const out = { error: e.type || e.name, message: e.message, retriable: e.retriable === true }
  const cause = e.originalError || e.cause // kafkajs wraps a broker's error code in KafkaJSNonRetriableError
  if (cause) out.cause = cause.type || cause.name
  return out
}

const kafka = new Kafka({
  clientId: 'kafkajs-driver',
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  logCreator: () => ({ namespace, level, log }) =>
    process.stderr.write(JSON.stringify({ namespace, level, ...log }) + '\n'),
  retry: { retries: 8, initialRetryTime: 100 },
})

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** Waits up to `seconds` for `ok()`; on time-out reports `what` and the members' state, then exits 2. */
async function waitUntil(what, seconds, members, ok) {
  const deadline = Date.now() + seconds * 1000
  while (!(await ok())) {
    if (Date.now() > deadline) {
      emit('error', { where: what, error: 'timeout', members: members.map(m => m.describe()) })
      process.exit(2)
    }
    await sleep(50)
  }
}

async function produce(first, count, partitions) {
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = first; i < first + count; i++) {
    messages.push({ key: `k${i}`, value: `v${i}`, partition: i % partitions })
  }
  const result = await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  emit('produced', { first, count, result })
}

/** One group member: a consumer that commits after every batch and remembers what its last join gave it. */
class Member {
  constructor(name, seen) {
    this.name = name
    this.memberId = ''
    this.partitions = []
    this.joins = 0
    this.consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: 6000,
      rebalanceTimeout: 10000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 100,
    })
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => {
      this.memberId = payload.memberId
      this.partitions = [...(payload.memberAssignment[topic] || [])].sort((a, b) => a - b)
      this.joins += 1
      emit('assigned', { member: name, member_id: this.memberId, leader: payload.isLeader,
        protocol: payload.groupProtocol, partitions: this.partitions })
    })
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) =>
      emit('error', { member: name, ...errorOf(payload.error) }))
    this.seen = seen
  }

  async start() {
    await this.consumer.connect()
    await this.consumer.subscribe({ topics: [topic], fromBeginning: true })
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return
        for (const m of batch.messages) this.seen.set(`${batch.partition}:${m.offset}`, m.value.toString())
        const next = (BigInt(batch.lastOffset()) + 1n).toString()
        try {
          await this.consumer.commitOffsets([{ topic, partition: batch.partition, offset: next }])
          emit('commit', { member: this.name, partition: batch.partition, offset: Number(next) })
        } catch (e) {
          emit('commit_failed', { member: this.name, ...errorOf(e) })
        }
      },
    })
  }

  describe() {
    return { name: this.name, member_id: this.memberId, partitions: this.partitions }
  }

  async stop() {
    await this.consumer.disconnect() // sends LeaveGroup
    emit('closed', { member: this.name })
  }
}

/** The server agrees with every member: Stable, the same member ids, each with the partitions it was given. */
async function settled(admin, members, partitions) {
  const all = members.flatMap(m => m.partitions)
  if (all.length !== partitions || new Set(all).size !== partitions) return false
  const [g] = (await admin.describeGroups([group])).groups
  if (g.state !== 'Stable' || g.members.length !== members.length) return false
  for (const m of members) {
    const d = g.members.find(x => x.memberId === m.memberId)
    if (!d) return false
    const a = AssignerProtocol.MemberAssignment.decode(d.memberAssignment)
    const ps = [...((a && a.assignment[topic]) || [])].sort((x, y) => x - y)
    if (JSON.stringify(ps) !== JSON.stringify(m.partitions)) return false
  }
  return true
}

/** Three members join, consume and commit everything; one leaves; the other two take over and consume on. */
async function groupOfThree(admin) {
  const partitions = 6
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
  await produce(0, 60, partitions)
  const seen = new Map()
  const members = [0, 1, 2].map(i => new Member(`kafkajs-${i}`, seen))
  await Promise.all(members.map(m => m.start()))
  await waitUntil('consume the first 60 records', 60, members, () => seen.size === 60)
  await waitUntil('three members settle', 30, members, () => settled(admin, members, partitions))
  await phase('consumed', { records: seen.size, members: members.map(m => m.describe()) })

  const leaving = members.shift()
  const joinsBefore = members.map(m => m.joins)
  await leaving.stop()
  await waitUntil('the two others take over', 30, members,
    async () => members.every((m, i) => m.joins > joinsBefore[i]) && settled(admin, members, partitions))
  await produce(60, 30, partitions)
  await waitUntil('consume the next 30 records', 30, members, () => seen.size === 90)
  await phase('after_leave', { records: seen.size, left: leaving.describe(), members: members.map(m => m.describe()) })
  for (const m of members) await m.stop()
}

/** Runs one admin call and reports `{"event": "admin", "call": name, "ok", "result" | "error"...}`. */
async function call(name, fn) {
  try {
    emit('admin', { call: name, ok: true, result: await fn() })
  } catch (e) {
    const groups = e.groups ? e.groups.map(g => ({ groupId: g.groupId, errorCode: g.errorCode, error: g.error && g.error.type })) : undefined
    emit('admin', { call: name, ok: false, ...errorOf(e), groups })
  }
}

function describeCall(admin) {
  return call('describe', async () => {
    const [g] = (await admin.describeGroups([group])).groups
    return {
      group_id: g.groupId, state: g.state, protocol: g.protocol, protocol_type: g.protocolType, error_code: g.errorCode,
      members: g.members.map(m => {
        const a = m.memberAssignment.length ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
        return { member_id: m.memberId, client_id: m.clientId, host: m.clientHost,
          partitions: [...((a && a.assignment[topic]) || [])].sort((x, y) => x - y) }
      }),
    }
  })
}

function offsetsCall(admin) {
  return call('offsets', async () => {
    const [t] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
    const out = {}
    for (const p of t.partitions) out[`${t.topic}:${p.partition}`] = { offset: Number(p.offset), metadata: p.metadata }
    return out
  })
}

/** listGroups, describeGroups, fetchOffsets, setOffsets, resetOffsets and deleteGroups around a real group. */
async function adminCalls(admin) {
  const partitions = 4
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
  await produce(0, 20, partitions)
  const seen = new Map()
  const members = [0, 1].map(i => new Member(`kafkajs-a${i}`, seen))
  await Promise.all(members.map(m => m.start()))
  await waitUntil('consume 20 records', 60, members, () => seen.size === 20)
  await waitUntil('two members settle', 30, members, () => settled(admin, members, partitions))
  await call('list', async () => (await admin.listGroups()).groups)
  await describeCall(admin)
  await offsetsCall(admin)
  await call('delete_live', () => admin.deleteGroups([group]))
  await phase('described', { members: members.map(m => m.describe()) })

  for (const m of members) await m.stop()
  await call('set_offsets', () => admin.setOffsets({ groupId: group, topic,
    partitions: [0, 1, 2, 3].map(p => ({ partition: p, offset: String(p + 1) })) }))
  await offsetsCall(admin)
  await phase('set')

  await call('reset_offsets', () => admin.resetOffsets({ groupId: group, topic, earliest: true }))
  await offsetsCall(admin)
  await phase('reset')

  await call('delete', () => admin.deleteGroups([group]))
  await call('list', async () => (await admin.listGroups()).groups)
  await describeCall(admin)
  await offsetsCall(admin)
  await call('delete_missing', () => admin.deleteGroups([group]))
  await phase('deleted')
}

/** POSTs `body` as JSON to the groupcoord HTTP control endpoint (node 18+'s built-in fetch). */
async function control(path, body) {
  const res = await fetch(controlUrl + path, { method: 'POST', body: JSON.stringify(body) })
  const json = await res.json()
  emit('control', { path, status: res.status, response: json })
  if (res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

/**
 * Two members consume; the test's HTTP control endpoint forces a rebalance (both rejoin and consume on), then
 * fails the next OffsetCommit of the group (a member sees the error; later commits catch up).
 */
async function controlled(admin) {
  const partitions = 2
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
  await produce(0, 20, partitions)
  const seen = new Map()
  const members = [0, 1].map(i => new Member(`kafkajs-c${i}`, seen))
  await Promise.all(members.map(m => m.start()))
  await waitUntil('consume the first 20 records', 60, members, () => seen.size === 20)
  await waitUntil('two members settle', 30, members, () => settled(admin, members, partitions))
  await phase('consumed', { records: seen.size, members: members.map(m => m.describe()) })

  const joinsBefore = members.map(m => m.joins)
  const forced = await control(`/v1/groups/${encodeURIComponent(group)}/rebalance`, { reason: 'kafkajs test' })
  await waitUntil('both members rejoin', 30, members,
    async () => members.every((m, i) => m.joins > joinsBefore[i]) && settled(admin, members, partitions))
  await produce(20, 10, partitions)
  await waitUntil('consume 10 more after the rebalance', 30, members, () => seen.size === 30)
  await phase('rebalanced', { forced, records: seen.size, members: members.map(m => m.describe()) })

  const fault = await control('/v1/faults', { apis: ['OffsetCommit'], error: 'REBALANCE_IN_PROGRESS', count: 1, group })
  await produce(30, 10, partitions)
  await waitUntil('consume 10 more with a failed commit', 30, members, () => seen.size === 40)
  await produce(40, 10, partitions)
  await waitUntil('consume the last 10', 30, members, () => seen.size === 50)
  await waitUntil('the group settles again', 30, members, () => settled(admin, members, partitions))
  await phase('committed', { fault, records: seen.size, members: members.map(m => m.describe()) })
  for (const m of members) await m.stop()
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  if (scenario === 'group3') await groupOfThree(admin)
  else if (scenario === 'admin') await adminCalls(admin)
  else if (scenario === 'control') await controlled(admin)
  else throw new Error(`unknown scenario ${scenario}`)
  await admin.disconnect()
  emit('done')
  process.exit(0)
}

main().catch(e => {
  emit('error', { where: 'main', ...errorOf(e), stack: e.stack })
  process.exit(1)
})
