// The KYC vocabulary lives in src/vocabulary.ts; kept here for the domain's own imports.
export { KYC_TYPES, KYC_VALIDITY_DAYS } from '../../vocabulary.js'
