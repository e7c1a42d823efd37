import { connect } from 'node:net'
import { networkInterfaces } from 'node:os'
import { describe, expect, it } from 'vitest'
import { freePort } from '../helpers/ports.js'
import { useServerProcesses } from '../helpers/server-process.js'

const processes = useServerProcesses()

/** This machine's first IPv4 address that is not loopback, if it has one. */
const outsideAddress = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)?.address

/** Whether a TCP connection to address:port is accepted. */
const accepts = (address: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, address)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })

/** The metrics server's start line (written just after the API's: waited for). */
async function metricsLine(output: string[]): Promise<string | undefined> {
  for (let waited = 0; waited < 10_000; waited += 100) {
    const line = output.find((entry) => entry.includes('metrics on '))
    if (line !== undefined) return line
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return undefined
}

describe('METRICS_HOST (issue 26, item 7)', () => {
  it('serves metrics on loopback only by default, even with the API on every interface', async () => {
    const metricsPort = await freePort()
    const service = await processes.start({ HOST: '0.0.0.0', METRICS_PORT: String(metricsPort) })
    expect(await metricsLine(service.output)).toContain(`metrics on 127.0.0.1:${metricsPort}/metrics`)
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toContain('nodejs_version_info')
    if (outsideAddress === undefined) return // no other address to try: the start line above says where it listens
    const apiPort = new URL(service.baseUrl).port
    expect(await accepts(outsideAddress, Number(apiPort))).toBe(true)
    expect(await accepts(outsideAddress, metricsPort)).toBe(false)
  })

  it('listens where METRICS_HOST says', async () => {
    const metricsPort = await freePort()
    const service = await processes.start({ METRICS_HOST: '0.0.0.0', METRICS_PORT: String(metricsPort) })
    expect(await metricsLine(service.output)).toContain(`metrics on 0.0.0.0:${metricsPort}/metrics`)
    if (outsideAddress !== undefined) expect(await accepts(outsideAddress, metricsPort)).toBe(true)
  })
})
