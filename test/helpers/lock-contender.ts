import { createInterface } from 'node:readline'
import { DataDirInUse, lockDataDir } from '../../src/db/data-dir-lock.js'

/**
 * A process that takes embedded-database locks when told, for test/platform/data-dir-lock.test.ts:
 * each stdin line `<folder> <epoch ms>` makes it wait for that instant (so that two contenders start
 * together), take the folder's lock and answer `held <folder>`, `busy <folder> <holder pid>` or
 * `error <folder> <message>`. It holds every lock it took until stdin closes, then exits.
 */
const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  const [folder = '', at = '0'] = line.split(' ')
  while (Date.now() < Number(at)) {
    // Spin: a timer would start the two contenders up to a millisecond apart.
  }
  let answer: string
  try {
    lockDataDir(folder)
    answer = `held ${folder}`
  } catch (error) {
    answer = error instanceof DataDirInUse ? `busy ${folder} ${error.holderPid}` : `error ${folder} ${(error as Error).message.split('\n')[0]}`
  }
  process.stdout.write(`${answer}\n`)
})
lines.on('close', () => process.exit(0))
process.stdout.write('ready\n')
