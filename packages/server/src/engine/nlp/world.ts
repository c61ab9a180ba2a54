// World knowledge the fact rules read values by (issue 53, session 14): closed classes whose members exclude each
// other or contain each other. A religion and its words of practice, languages, sports teams and their leagues,
// vehicle brands and models, and which country or state a city is in. Lower case; multi-word names space-separated.

import { lookupTable } from '../../core/lookup.js';

/** A lookup by any word, from its entries (`lookupTable`: "constructor" is no key). */
export const dict = <T>(entries: Array<readonly [string, T]>): Record<string, T> =>
  lookupTable(Object.fromEntries(entries));

const list = (text: string) =>
  text
    .trim()
    .split(/\s*\|\s*/)
    .filter(Boolean);

/** A religion's family by the words that name it or its practice ("mass" is a Christian's, "synagogue" a Jew's). */
export const RELIGIONS: Record<string, string> = dict(
  (
    [
      [
        'christian',
        'christian | christianity | catholic | catholicism | protestant | baptist | methodist | lutheran | anglican | ' +
          'evangelical | presbyterian | pentecostal | mormon | orthodox christian | church | mass | baptised | baptized',
      ],
      ['jewish', 'jewish | jew | judaism | synagogue | shul'],
      ['muslim', 'muslim | islam | mosque'],
      ['hindu', 'hindu | hinduism'],
      ['buddhist', 'buddhist | buddhism'],
      ['sikh', 'sikh | sikhism | gurdwara'],
      ['none', 'atheist | agnostic'],
    ] as const
  ).flatMap(([family, words]) => list(words).map((w) => [w, family])),
);
/** Words of RELIGIONS that name a place or an act of worship, not a creed one is ("I go to church"). */
export const WORSHIP = new Set(['church', 'mass', 'synagogue', 'shul', 'mosque', 'gurdwara', 'baptised', 'baptized']);

export const LANGUAGES = new Set(
  list(`
english | spanish | french | german | italian | portuguese | mandarin | chinese | cantonese | japanese | korean |
arabic | russian | hindi | dutch | swedish | norwegian | danish | finnish | polish | greek | turkish | hebrew |
vietnamese | thai | tagalog | swahili | urdu | bengali | punjabi | irish | welsh | gaelic | ukrainian | czech |
hungarian | romanian | persian | farsi | indonesian | malay | latin | sign language | asl | bsl
`),
);

/** Sports teams by the league whose fans support one at a time (a fan of the Lakers and the Celtics is rare). */
export const TEAMS: Record<string, string> = dict(
  (
    [
      [
        'nba',
        'lakers | celtics | warriors | bulls | knicks | miami heat | nets | mavericks | mavs | rockets | suns | bucks | ' +
          '76ers | sixers | raptors | clippers | nuggets | pistons | pacers | cavaliers | cavs | grizzlies | pelicans | ' +
          'timberwolves | trail blazers | blazers | hornets | wizards | san antonio spurs',
      ],
      [
        'mlb',
        'yankees | red sox | mets | dodgers | cubs | white sox | braves | astros | phillies | mariners | padres | ' +
          'orioles | blue jays | royals | brewers | diamondbacks | rockies | guardians',
      ],
      [
        'nfl',
        'patriots | cowboys | packers | steelers | eagles | 49ers | niners | chiefs | seahawks | broncos | ravens | ' +
          'dolphins | buffalo bills | raiders | vikings | saints | falcons | chargers | buccaneers | bucs | titans | ' +
          'colts | texans | bengals | browns | jaguars',
      ],
      ['nhl', 'maple leafs | canadiens | habs | bruins | penguins | blackhawks | red wings | oilers | canucks'],
      [
        'football',
        'liverpool | arsenal | chelsea | manchester united | man united | man utd | manchester city | man city | ' +
          'tottenham | spurs | everton | newcastle | west ham | aston villa | leeds | celtic | rangers | barcelona | ' +
          'barca | real madrid | atletico | bayern | juventus | ac milan | inter milan | psg | ajax | dortmund | benfica',
      ],
    ] as const
  ).flatMap(([league, teams]) => list(teams).map((t) => [t, league])),
);

/** Vehicle brands and models by the kind of vehicle they are ("I sold my car" ends "I drive a Corolla"). */
export const VEHICLES: Record<string, string> = dict(
  (
    [
      [
        'car',
        'toyota | honda | ford | tesla | subaru | bmw | audi | volkswagen | vw | nissan | mazda | hyundai | kia | ' +
          'chevy | chevrolet | jeep | volvo | fiat | mercedes | porsche | lexus | skoda | renault | peugeot | mini | ' +
          'corolla | camry | prius | civic | accord | golf | polo | focus | fiesta | outback | forester | model 3 | ' +
          'mustang | beetle | jetta | rav4 | cr-v',
      ],
      ['motorcycle', 'harley | harley-davidson | ducati | vespa | yamaha | kawasaki'],
      ['bicycle', 'trek | specialized | cannondale | brompton'],
    ] as const
  ).flatMap(([kind, names]) => list(names).map((n) => [n, kind])),
);

/** The country (or US state, then country) a city or state is in. */
const WITHIN: Record<string, string> = dict(
  (
    [
      [
        'united states',
        'california | texas | florida | oregon | colorado | new jersey | ohio | michigan | georgia | arizona | nevada | ' +
          'utah | vermont | maine | washington state | new york state | illinois | massachusetts | pennsylvania | ' +
          'minnesota | tennessee | north carolina | virginia | wisconsin | iowa | indiana | missouri | kentucky | ' +
          'alaska | hawaii | louisiana | alabama | oklahoma | kansas | nebraska | idaho | montana | new mexico | ' +
          'connecticut | maryland | south carolina | new york | chicago | boston | seattle | portland | austin | ' +
          'houston | dallas | denver | miami | atlanta | phoenix | philadelphia | las vegas | san diego | detroit | ' +
          'nashville | new orleans | minneapolis | los angeles | san francisco | brooklyn | manhattan | queens | ' +
          'tampa | orlando | sacramento | tucson | pittsburgh | cleveland | baltimore | st louis | kansas city | ' +
          'salt lake city | san jose | oakland | charlotte | raleigh | richmond | honolulu | anchorage | tacoma',
      ],
      ['california', 'los angeles | san francisco | san diego | sacramento | oakland | san jose'],
      ['texas', 'austin | houston | dallas | san antonio'],
      ['florida', 'miami | tampa | orlando | jacksonville'],
      ['washington state', 'seattle | tacoma | spokane'],
      ['michigan', 'detroit | ann arbor | grand rapids'],
      ['ohio', 'cleveland | columbus | cincinnati'],
      ['illinois', 'chicago'],
      ['massachusetts', 'boston | cambridge'],
      ['new york state', 'new york | brooklyn | manhattan | queens | buffalo | rochester'],
      ['canada', 'toronto | vancouver | montreal | ottawa | calgary | edmonton | quebec | winnipeg | halifax'],
      ['mexico', 'mexico city | guadalajara | cancun'],
      [
        'united kingdom',
        'england | scotland | wales | northern ireland | london | manchester | liverpool | leeds | bristol | ' +
          'newcastle | birmingham | sheffield | nottingham | oxford | cambridge | brighton | edinburgh | glasgow | ' +
          'cardiff | belfast | aberdeen',
      ],
      ['england', 'london | manchester | liverpool | leeds | bristol | newcastle | birmingham | sheffield | brighton'],
      ['scotland', 'edinburgh | glasgow | aberdeen'],
      ['ireland', 'dublin | cork | galway | limerick'],
      ['france', 'paris | lyon | marseille | nice | bordeaux | toulouse | provence'],
      ['germany', 'berlin | munich | hamburg | frankfurt | cologne | bavaria | stuttgart | leipzig'],
      ['spain', 'madrid | barcelona | valencia | seville | malaga | bilbao'],
      ['portugal', 'lisbon | porto'],
      ['italy', 'rome | milan | venice | florence | naples | turin | tuscany'],
      ['netherlands', 'amsterdam | rotterdam | utrecht | the hague'],
      ['belgium', 'brussels | antwerp | ghent'],
      ['switzerland', 'zurich | geneva | basel | bern'],
      ['austria', 'vienna | salzburg'],
      ['czech republic', 'prague'],
      ['hungary', 'budapest'],
      ['poland', 'warsaw | krakow'],
      ['sweden', 'stockholm | gothenburg | malmo | uppsala'],
      ['norway', 'oslo | bergen'],
      ['denmark', 'copenhagen | aarhus'],
      ['finland', 'helsinki'],
      ['iceland', 'reykjavik'],
      ['greece', 'athens | thessaloniki'],
      ['turkey', 'istanbul | ankara'],
      ['russia', 'moscow | st petersburg'],
      ['ukraine', 'kyiv | kiev | lviv'],
      ['egypt', 'cairo'],
      ['israel', 'tel aviv | jerusalem'],
      ['united arab emirates', 'dubai | abu dhabi'],
      ['india', 'mumbai | delhi | bangalore | chennai | kolkata | hyderabad'],
      ['china', 'beijing | shanghai | shenzhen | guangzhou'],
      ['japan', 'tokyo | kyoto | osaka | sapporo | yokohama'],
      ['south korea', 'seoul | busan'],
      ['thailand', 'bangkok | chiang mai'],
      ['vietnam', 'hanoi | ho chi minh city | saigon'],
      ['indonesia', 'jakarta | bali'],
      ['philippines', 'manila'],
      ['australia', 'sydney | melbourne | brisbane | perth | adelaide'],
      ['new zealand', 'auckland | wellington'],
      ['south africa', 'cape town | johannesburg'],
      ['kenya', 'nairobi'],
      ['nigeria', 'lagos'],
      ['brazil', 'rio de janeiro | sao paulo'],
      ['argentina', 'buenos aires'],
      ['peru', 'lima'],
      ['colombia', 'bogota'],
      ['chile', 'santiago'],
    ] as const
  ).flatMap(([outer, inner]) => list(inner).map((p) => [`${p}>${outer}`, outer])),
);
/** Another name of one country. */
const COUNTRY_NAMES: Record<string, string> = dict<string>(
  Object.entries({
    usa: 'united states',
    america: 'united states',
    'the us': 'united states',
    'the states': 'united states',
    uk: 'united kingdom',
    britain: 'united kingdom',
    'great britain': 'united kingdom',
    holland: 'netherlands',
    korea: 'south korea',
  }),
);
const place = (name: string) => {
  const lower = name.toLowerCase().trim();
  return COUNTRY_NAMES[lower] ?? lower;
};

/** Whether one place is inside the other (Gothenburg in Sweden, Tampa in Florida), either way round. */
export function placeWithin(a: string, b: string): boolean {
  const [x, y] = [place(a), place(b)];
  return WITHIN[`${x}>${y}`] !== undefined || WITHIN[`${y}>${x}`] !== undefined;
}

const KNOWN_PLACES = new Set([
  ...Object.keys(WITHIN).flatMap((k) => k.split('>')),
  ...Object.keys(COUNTRY_NAMES),
  ...Object.values(COUNTRY_NAMES),
]);
/** Whether a name is a place this list knows (a city, state or country). */
export const knownPlace = (name: string) => KNOWN_PLACES.has(name.toLowerCase());

/** The first words of every name of the closed classes above: a word not among them starts none of their names. */
export const FIRST_WORDS = new Set(
  [...Object.keys(RELIGIONS), ...LANGUAGES, ...Object.keys(TEAMS), ...KNOWN_PLACES].map((n) => n.split(' ')[0]!),
);
