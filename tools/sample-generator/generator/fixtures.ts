// Larger generated files of the fictional repository: the invoice fixtures used by the API tests and the
// CHANGELOG, both of realistic size.
import type { Rng } from './random.js';

const PRODUCTS = [
  ['Consulting, senior (hours)', 120, 'standard'],
  ['Consulting, junior (hours)', 85, 'standard'],
  ['Hosting, managed (monthly)', 49, 'standard'],
  ['Support plan, business', 299, 'standard'],
  ['Training workshop (day)', 1450, 'standard'],
  ['Travel expenses (flat)', 86.4, 'reduced'],
  ['Printed manual', 24, 'reduced'],
  ['Domain renewal', 14.99, 'standard'],
  ['SSL certificate', 69, 'standard'],
  ['Data migration (fixed price)', 2400, 'standard'],
  ['E-book licence', 9.99, 'reduced'],
  ['On-site visit', 380, 'standard'],
] as const;

export function invoiceFixtures(rng: Rng): string {
  const invoices = [];
  for (let i = 0; i < 170; i++) {
    const month = rng.int(1, 6);
    const day = rng.int(1, 28);
    const issuedAt = `2024-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    const lines = [];
    for (let l = 0; l < rng.int(1, 4); l++) {
      const [description, unitPrice, category] = rng.pick(PRODUCTS);
      lines.push({
        description,
        quantity: rng.int(1, 12),
        unitPrice,
        category,
        ...(rng.chance(0.15) ? { discountPercent: rng.pick([5, 10, 15, 20]) } : {}),
      });
    }
    invoices.push({
      number: `INV-${4100 + i}`,
      customerId: `cust-${rng.int(1, 48)}`,
      currency: rng.chance(0.9) ? 'EUR' : rng.pick(['USD', 'GBP', 'CHF']),
      issuedAt,
      termsDays: rng.pick([14, 30, 30, 30, 45, 60]),
      region: rng.pick(['DE', 'DE', 'DE', 'FR', 'NL', 'AT', 'IT', 'ES']),
      status: rng.pick(['draft', 'finalized', 'finalized', 'paid', 'paid', 'void']),
      lines,
    });
  }
  return `${JSON.stringify({ $comment: 'Invoices for the API and report tests. Generated once from anonymised 2024 data; edit by hand.', invoices }, null, 2)}\n`;
}

const CHANGE_POOL = {
  Added: [
    'Tax preview endpoint `POST /tax/preview`',
    'Receipt footer lines (bank details, legal notes)',
    'Cash flow forecast report per ISO week',
    'Top customers report with revenue share',
    'Credit notes report',
    'Reduced and super-reduced VAT categories',
    'KWD and other three-digit currencies',
    '`Money.allocate()` for instalments',
    'Aging report in 30-day buckets',
    'Markdown rendering for all reports',
    '`InMemoryInvoiceRepository.lock()` test helper',
    'Payment terms per invoice (`termsDays`)',
  ],
  Fixed: [
    'Receipt totals misaligned for three-digit currencies',
    'Overdue days off by one at month end',
    'Discount rounding for quantities above 1',
    'Invoice numbers with more than four digits rejected',
    '`endOfMonth` for February in leap years',
    'Duplicate lines when an invoice was saved twice',
    'Negative zero printed as `-0.00`',
    'Report sorting unstable for equal amounts',
    'Rates for Luxembourg during the 2023 temporary cut',
  ],
  Changed: [
    'Tax is rounded per line, not on the invoice total (DE/FR rules)',
    'Reports sum amounts in cents',
    'Fastify 4.26',
    'Receipts are 48 columns wide by default',
    'Dates are ISO calendar dates everywhere',
  ],
} as const;

export function changelog(rng: Rng): string {
  const out = [
    '# Changelog',
    '',
    'All notable changes to this project are documented here. The format is based on Keep a Changelog and the project follows semantic versioning.',
    '',
  ];
  const versions: string[] = [];
  for (let major = 0; major <= 2; major++) {
    for (let minor = 0; minor <= (major === 2 ? 3 : 6); minor++) {
      for (let patch = 0; patch <= rng.int(0, 2); patch++) versions.push(`${major}.${minor}.${patch}`);
    }
  }
  let date = Date.UTC(2024, 5, 12);
  for (const version of versions.reverse()) {
    out.push(`## [${version}] - ${new Date(date).toISOString().slice(0, 10)}`, '');
    for (const [section, pool] of Object.entries(CHANGE_POOL)) {
      if (!rng.chance(0.6)) continue;
      out.push(`### ${section}`, '');
      for (const item of rng.sample(pool, rng.int(1, 3))) out.push(`- ${item} (#${rng.int(40, 410)})`);
      out.push('');
    }
    date -= rng.int(7, 40) * 86_400_000;
  }
  return out.join('\n');
}
