export interface ConsumerResult {
  version: string
  config: string
  ok: boolean
  output: string
}
export declare function checkConsumers(versions?: (string | undefined)[]): ConsumerResult[]
