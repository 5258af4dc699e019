'use strict'
/**
 * kafkajs 2.2.4 driven one command at a time by the shared scenarios (tests/integration/clients.py,
 * `KafkajsClient`): each stdin line is a command, answered by one `{"event": "reply", ...}` line on stdout
 * (`result`, or `error`). Values are separated by spaces; "-" stands for none/empty. The commands are those
 * of tests/drivers/java/ScenarioDriver.java; the first line must be "bootstrap HOST:PORT". kafkajs has no
 * static membership (it never sends a group.instance.id): the static scenario is not generated for it.
 *
 * Usage: node scenario.js, or node scenario.js child BOOTSTRAP TOPIC GROUP SESSION_MS (one consumer that
 * prints "assigned" once it owns partitions, then runs until killed). kafkajs logs go to stderr.
 */
const readline = require('readline')
const { Kafka, logLevel, AssignerProtocol } = require('kafkajs')

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n')
}

function errorOf(e) {
  return { error: e.type || e.name, message: e.message }
}

function kafkaFor(bootstrap, clientId) {
  return new Kafka({
    clientId: clientId || 'kafkajs-scenario',
    brokers: [bootstrap],
    logLevel: logLevel.ERROR,
    logCreator: () => ({ namespace, level, log }) =>
      process.stderr.write(JSON.stringify({ namespace, level, ...log }) + '\n'),
    retry: { retries: 8, initialRetryTime: 100 },
  })
}

const none = s => (s === '-' ? null : s)

/** One consumer; what its last join gave it is what it owns (kafkajs exposes no generation). */
class Member {
  constructor(bootstrap, topic, group, sessionMs, heartbeatMs, clientId) {
    this.topic = topic
    this.group = group
    this.memberId = null
    this.partitions = []
    this.error = null
    this.consumer = kafkaFor(bootstrap, clientId).consumer({
      groupId: group,
      sessionTimeout: sessionMs,
      rebalanceTimeout: 10000,
      heartbeatInterval: heartbeatMs,
      maxWaitTimeInMs: 100,
    })
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => {
      this.memberId = payload.memberId
      this.partitions = Object.entries(payload.memberAssignment).flatMap(([t, ps]) => ps.map(p => [t, p]))
    })
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      this.error = errorOf(payload.error)
    })
  }

  async start() {
    await this.consumer.connect()
    await this.consumer.subscribe({ topics: [this.topic] })
    await this.consumer.run({ autoCommit: false, eachBatch: async () => {} })
  }

  async stop() {
    await this.consumer.disconnect() // sends LeaveGroup
  }
}

function decodeAssignment(buffer) {
  const a = buffer.length ? AssignerProtocol.MemberAssignment.decode(buffer) : null
  return a ? Object.entries(a.assignment).flatMap(([t, ps]) => ps.map(p => [t, p])) : []
}

async function command(a, bootstrap, admin, members) {
  switch (a[0]) {
    case 'topic':
      await admin.createTopics({ topics: [{ topic: a[1], numPartitions: Number(a[2]) }] })
      return null
    case 'consumer': {
      const m = new Member(bootstrap, a[2], a[3], Number(a[4]), Number(a[5]), none(a[7]))
      await m.start()
      members.set(a[1], m)
      return null
    }
    case 'state': {
      const m = members.get(a[1])
      return { generation: null, member_id: m.memberId, partitions: m.partitions, error: m.error }
    }
    case 'commit': {
      const offsets = []
      for (let i = 2; i + 3 < a.length; i += 4) {
        offsets.push({ topic: a[i], partition: Number(a[i + 1]), offset: a[i + 2], metadata: none(a[i + 3]) })
      }
      await members.get(a[1]).consumer.commitOffsets(offsets)
      return null
    }
    case 'committed': {
      const m = members.get(a[1])
      const wanted = []
      for (let i = 2; i + 1 < a.length; i += 2) wanted.push(`${a[i]}:${a[i + 1]}`)
      const topics = [...new Set(wanted.map(k => k.slice(0, k.lastIndexOf(':'))))]
      const out = {}
      for (const t of await admin.fetchOffsets({ groupId: m.group, topics })) {
        for (const p of t.partitions) {
          const key = `${t.topic}:${p.partition}`
          if (wanted.includes(key)) out[key] = [Number(p.offset), p.metadata]
        }
      }
      return out
    }
    case 'close': {
      const m = members.get(a[1])
      members.delete(a[1])
      if (m) await m.stop()
      return null
    }
    case 'list':
      return (await admin.listGroups()).groups.map(g => ({ group_id: g.groupId, protocol_type: g.protocolType }))
    case 'describe': {
      const [g] = (await admin.describeGroups([a[1]])).groups
      return {
        error: g.errorCode, state: g.state, protocol: g.protocol, protocol_type: g.protocolType,
        members: g.members.map(m => ({
          client_id: m.clientId,
          partitions: decodeAssignment(m.memberAssignment),
          topics: m.memberMetadata.length ? AssignerProtocol.MemberMetadata.decode(m.memberMetadata).topics : null,
        })),
      }
    }
    case 'delete': {
      const groups = a.slice(1)
      const out = Object.fromEntries(groups.map(g => [g, 'ok']))
      try {
        await admin.deleteGroups(groups)
      } catch (e) {
        if (!e.groups) throw e
        const names = { 68: 'non_empty', 69: 'not_found' }
        for (const g of e.groups) out[g.groupId] = names[g.errorCode] || String(g.errorCode)
      }
      return out
    }
    default:
      throw new Error(`unknown command ${a[0]}`)
  }
}

async function repl() {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  const first = await lines.next()
  if (first.done || !first.value.startsWith('bootstrap ')) {
    emit('error', { where: 'start', error: 'protocol', message: 'expected: bootstrap HOST:PORT' })
    process.exit(3)
  }
  const bootstrap = first.value.slice('bootstrap '.length).trim()
  emit('reply', { result: null })
  const admin = kafkaFor(bootstrap, 'kafkajs-scenario-admin').admin()
  await admin.connect()
  const members = new Map()
  for (;;) {
    const { value, done } = await lines.next()
    if (done) break
    const a = value.trim().split(' ')
    if (a[0] === 'quit') break
    try {
      emit('reply', { result: await command(a, bootstrap, admin, members) })
    } catch (e) {
      emit('reply', { error: errorOf(e) })
    }
  }
  for (const m of members.values()) await m.stop()
  await admin.disconnect()
  emit('done')
  process.exit(0)
}

async function child(bootstrap, topic, group, sessionMs) {
  const m = new Member(bootstrap, topic, group, sessionMs, 300, null)
  await m.start()
  const deadline = Date.now() + 30000
  while (m.partitions.length === 0 && Date.now() < deadline) await new Promise(r => setTimeout(r, 50))
  process.stdout.write((m.partitions.length ? 'assigned' : 'unassigned') + '\n')
}

const args = process.argv.slice(2)
const run = args[0] === 'child' ? child(args[1], args[2], args[3], Number(args[4])) : repl()
run.catch(e => {
  emit('error', { where: 'main', ...errorOf(e), stack: e.stack })
  process.exit(1)
})
