/** A calendar month in UTC: the period of quotas and usage. */
export interface Month {
  /** `YYYY-MM` */
  key: string;
  start: Date;
  end: Date;
}

/** The calendar month (UTC) containing `at`. */
export function monthOf(at: Date): Month {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { key: start.toISOString().slice(0, 7), start, end };
}
