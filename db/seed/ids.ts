/** Fixed identifiers of the demo data (docs/demo-data.md), so that examples, tests and docs can name them. */
const id = (prefix: string, n: number): string => `${prefix}-0000-4000-8000-${String(n).padStart(12, '0')}`

export const DEMO = {
  users: {
    alice: id('10000000', 1),
    bob: id('10000000', 2),
    carol: id('10000000', 3),
    dave: id('10000000', 4),
    erin: id('10000000', 5),
    frank: id('10000000', 6),
    maria: id('10000000', 7),
    lucas: id('10000000', 8),
  },
  companies: { acme: id('20000000', 1), beta: id('20000000', 2), gamma: id('20000000', 3), delta: id('20000000', 4) },
  roles: {
    acmeSeller: id('30000000', 1),
    betaBuyer: id('30000000', 2),
    gammaSeller: id('30000000', 3),
    deltaSeller: id('30000000', 4),
    deltaBuyer: id('30000000', 5),
  },
  bankAccounts: {
    acme1: id('40000000', 1),
    acme2: id('40000000', 2),
    acme3: id('40000000', 3),
    gamma1: id('40000000', 4),
    delta1: id('40000000', 5),
    delta2: id('40000000', 6),
  },
  titles: { t1: id('50000000', 1), t2: id('50000000', 2), t3: id('50000000', 3), t4: id('50000000', 4), t5: id('50000000', 5) },
  titleDocuments: {
    t1Invoice: id('60000000', 1),
    t1NfeXml: id('60000000', 2),
    t1Contract: id('60000000', 3),
    t2Invoice: id('60000000', 4),
    t5Invoice: id('60000000', 5),
    t5Contract: id('60000000', 6),
  },
  customers: {
    acmeCompany: id('70000000', 1),
    acmePerson: id('70000000', 2),
    gammaCompany: id('70000000', 3),
    deltaCompany: id('70000000', 4),
  },
  bids: { betaOnT1: id('80000000', 1), betaOnT5: id('80000000', 2) },
  operations: { t5: id('81000000', 1) },
  envelopes: { pending: id('a0000000', 1), signed: id('a0000000', 2) },
  conversations: { betaAcme: id('90000000', 1), deltaGamma: id('90000000', 2) },
} as const
