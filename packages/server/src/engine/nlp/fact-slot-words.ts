// The cue vocabulary of the implied slots (fact-slots.ts), written by category from what surrounds a home and a job
// in everyday life, not from any labelled set's sentences. Words are matched as written (lower case), so a plural
// that speaks of dwellings in general ("apartments in Paris are tiny") is no cue where its singular is.
const words = (text: string) => new Set(text.trim().split(/\s+/));

/** A home, by category: dwellings, tenancy and ownership, moving, the household, the street, the way to work. */
export const HOME_CUES = words(`
  house home flat apartment apt condo studio loft bungalow cottage duplex townhouse townhome dorm bedsit basement
  attic houseboat trailer place
  landlord landlady lease rent rented renting rental tenant tenancy deposit mortgage realtor
  move moved relocated settled settling unpacked unpacking unpack movers housewarming
  neighbours neighbors neighbour neighbor neighbourhood neighborhood street block
  roommate roommates flatmate flatmates housemate housemates
  commute commuting
  garden backyard yard porch balcony driveway
  live lives living lived reside resides residing based
`);
/** "here in Leeds", "back home in Ohio", "out here in Denver": the writer is in the place as at home. */
export const HOME_DEIXIS = new Set(['here in', 'home in']);

/** Words near a place that make it a home left ("sold", "empty", "left", "miss"). */
export const OLD_HOME = words(`empty emptied sold selling sell left leaving leave vacated miss missed`);
/** Words before a place that make it a home of the past or of origin ("the old flat", "back home in Ohio"). */
export const OLD_BEFORE = words(`old former previous ex back`);
/** The word before a place that makes it where one comes from. */
export const ORIGIN = words(`from of outside near`);

/** A job, by category: the people at work, its hours, its pay, its start and its end, its place. */
export const JOB_CUES = words(`
  boss bosses manager supervisor coworker coworkers co-worker co-workers colleague colleagues team teammates
  shift shifts overtime rota payroll paycheck paycheque salary raise promotion promoted
  onboarding orientation hired hire joined started starting start employer employee staff job role position gig
  contract probation internship intern desk office badge uniform
  work working worked works
`);
/** Words before a place that make it where one works or studies ("work in Swansea", "my office in Sydney"). */
export const WORK_HERE = words(`work works working worked office job school study studying campus conference meeting`);
/** Nouns of a job that, said new ("a new job", "my new coworkers"), say the employer changed even unnamed. */
export const NEW_JOB = words(
  `job role position boss manager supervisor coworkers co-workers colleagues employer workplace`,
);
/** Words that end a job before its employer ("quit my job at IBM", "my last day at Tesco", "laid off from"). */
export const JOB_ENDED = words(`
  quit quitting left leaving leave fired sacked laid redundant resigned resigning notice last lost retired retiring
  former ex old previous used
`);
/** Words that make a statement a plan, a wish, a condition, a stay or a visit (beside fact-endings.ts's hedges). */
export const SLOT_HEDGES = words(`
  if would could might maybe perhaps someday thinking consider considering plan planning hope hoping wish dream
  looking want wanted visiting visited visit trip holiday holidays vacation conference hotel airbnb
  honeymoon interview interviewed applied apply applying application offer offered staying
`);
/** Words that put a statement in the past or someone's memory ("grew up", "as a kid", "years ago"). */
export const NOT_NOW = words(`grew born childhood kid ago used was were `);
/** A span of a stay ("for two weeks", "this weekend", "a few days") before its unit. */
export const STAY_SPANS = words(`for this few couple two three several`);
export const STAY_UNITS = words(`week weeks days nights night weekend month months`);

/** The status the word one names one's partner by implies ("my girlfriend": dating, "my wife": married). */
export const PARTNER_STATUS = new Map([
  ...[...words(`boyfriend girlfriend bf gf`)].map((w) => [w, 'dating'] as const),
  ...[...words(`fiance fiancé fiancee fiancée`)].map((w) => [w, 'engaged'] as const),
  ...[...words(`husband wife hubby spouse`)].map((w) => [w, 'married'] as const),
]);
/** Words between "my" and a partner's word that keep the partner the writer's now ("my lovely wife", "my new bf"). */
export const PARTNER_PRAISE = words(`lovely beautiful amazing wonderful darling dear sweet new gorgeous`);
/** Words that make a partner's word a wish or a condition ("if I had a girlfriend", "my future wife someday"). */
export const STATUS_HEDGES = words(`if would could might maybe perhaps someday wish dream imagine`);
/** Words that make a partner's word one of the past or another's ("ex", "late", "divorce", "broke up", "passed"). */
export const PARTED = words(`
  ex ex-wife ex-husband ex-boyfriend ex-girlfriend late former future first second next old
  broke split divorce divorced divorcing separated separating dumped cheated died passed funeral widow widowed
  widower
`);
