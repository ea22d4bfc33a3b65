// A second schema registry client family for tests/integration/test_schema_registry_node.py:
// @kafkajs/confluent-schema-registry registers schemas, encodes values into Confluent's wire
// format and decodes payloads. It reads one JSON job on stdin and writes one JSON answer.
'use strict'

const fs = require('fs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

async function main() {
  const job = JSON.parse(fs.readFileSync(0, 'utf8'))
  const registry = new SchemaRegistry({ host: job.url })
  const answer = { ids: [], encoded: [], decoded: [] }
  for (const { subject, type, schema } of job.register || []) {
    const { id } = await registry.register({ type: SchemaType[type], schema }, { subject })
    answer.ids.push(id)
  }
  for (const { id, values } of job.encode || []) {
    for (const value of values) {
      answer.encoded.push((await registry.encode(id, value)).toString('hex'))
    }
  }
  for (const hex of job.decode || []) {
    answer.decoded.push(await registry.decode(Buffer.from(hex, 'hex')))
  }
  process.stdout.write(JSON.stringify(answer))
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`)
  process.exit(1)
})
