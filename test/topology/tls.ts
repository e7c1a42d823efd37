import { execFileSync } from 'node:child_process'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * A certificate authority made for one test, and a server certificate it signed for `localhost` and
 * 127.0.0.1, with openssl: written as `<dir>/tls/fullchain.pem` and `<dir>/tls/privkey.pem`, where
 * deploy/nginx.conf reads them (relative to its folder). Returns the authority's certificate, which
 * the test's clients trust instead of turning verification off.
 */
export async function makeTestCertificates(dir: string): Promise<{ ca: string }> {
  const work = path.join(dir, 'ca')
  const tls = path.join(dir, 'tls')
  await mkdir(work, { recursive: true })
  await mkdir(tls, { recursive: true })
  const file = (name: string) => path.join(work, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] })
  const p256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  openssl('req', '-x509', ...p256, '-days', '2', '-subj', '/CN=receivables test CA', '-keyout', file('ca.key'), '-out', file('ca.pem'))
  openssl('req', ...p256, '-subj', '/CN=localhost', '-keyout', path.join(tls, 'privkey.pem'), '-out', file('server.csr'))
  await writeFile(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n')
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('server.ext'),
    '-out',
    path.join(tls, 'fullchain.pem'),
  )
  const ca = await readFile(file('ca.pem'), 'utf8')
  await rm(work, { recursive: true, force: true })
  return { ca }
}
