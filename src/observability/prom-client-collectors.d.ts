// prom-client's collectors, one module each (what its collectDefaultMetrics calls); untyped by the package.
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client'
  const collector: (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void
  export default collector
}
