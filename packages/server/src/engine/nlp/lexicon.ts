// Word lists the rule-based extractor recognises names with. Lower case; multi-word names are space-separated.
import { lookupTable } from '../../core/lookup.js';

const words = (text: string) =>
  new Set(
    text
      .trim()
      .split(/\s*\|\s*/)
      .filter(Boolean),
  );

export const PLACES = words(`
new york | new york city | los angeles | san francisco | chicago | boston | seattle | portland | austin | houston | dallas | denver |
miami | atlanta | phoenix | philadelphia | washington | las vegas | san diego | detroit | nashville | new orleans | minneapolis |
toronto | vancouver | montreal | mexico city | london | paris | berlin | munich | hamburg | madrid | barcelona | lisbon | rome |
milan | venice | florence | amsterdam | brussels | vienna | prague | budapest | warsaw | stockholm | oslo | copenhagen | helsinki |
dublin | edinburgh | manchester | zurich | geneva | athens | istanbul | moscow | kyiv | cairo | dubai | tel aviv | mumbai | delhi |
bangalore | beijing | shanghai | hong kong | tokyo | kyoto | osaka | seoul | singapore | bangkok | hanoi | jakarta | bali | manila |
sydney | melbourne | auckland | cape town | nairobi | lagos | rio de janeiro | sao paulo | buenos aires | lima | bogota | santiago |
havana | reykjavik | marrakech | tuscany | provence | yosemite | hawaii | alaska | california | texas | florida | oregon | colorado |
new jersey | ohio | michigan | georgia | arizona | nevada | utah | vermont | maine | brooklyn | manhattan | queens | bavaria |
usa | united states | america | canada | mexico | brazil | argentina | chile | peru | colombia | uk | united kingdom | england |
scotland | wales | ireland | france | germany | spain | portugal | italy | netherlands | belgium | switzerland | austria | poland |
sweden | norway | denmark | finland | iceland | greece | turkey | russia | ukraine | egypt | morocco | kenya | nigeria |
south africa | india | china | japan | korea | south korea | vietnam | thailand | indonesia | philippines | australia |
new zealand | israel | europe | asia | africa | nyc | la | sf | dc | the alps | the rockies
`);

/** Spelling variants that name one place or organisation: the value is the canonical name. */
export const ALIASES: Record<string, string> = lookupTable({
  nyc: 'New York',
  'new york city': 'New York',
  'the big apple': 'New York',
  la: 'Los Angeles',
  sf: 'San Francisco',
  'san fran': 'San Francisco',
  dc: 'Washington',
  'washington dc': 'Washington',
  usa: 'United States',
  us: 'United States',
  america: 'United States',
  'the us': 'United States',
  'the usa': 'United States',
  'the states': 'United States',
  uk: 'United Kingdom',
  'great britain': 'United Kingdom',
  britain: 'United Kingdom',
  'the uk': 'United Kingdom',
  'south korea': 'Korea',
  holland: 'Netherlands',
  'the netherlands': 'Netherlands',
  bombay: 'Mumbai',
  'new delhi': 'Delhi',
  msft: 'Microsoft',
  'google llc': 'Google',
  alphabet: 'Google',
  fb: 'Facebook',
  meta: 'Facebook',
});

export const ORGANIZATIONS = words(`
google | microsoft | apple | amazon | facebook | meta | netflix | spotify | tesla | ibm | intel | nvidia | oracle | salesforce |
adobe | uber | lyft | airbnb | twitter | linkedin | starbucks | walmart | target | costco | ikea | nike | adidas | toyota |
honda | bmw | volkswagen | mercedes | boeing | airbus | nasa | fbi | cia | un | unicef | red cross | who | mit | harvard |
stanford | yale | princeton | oxford | cambridge | berkeley | ucla | nyu | columbia | deloitte | mckinsey | goldman sachs |
jp morgan | morgan stanley | pfizer | moderna | openai | anthropic | stripe | shopify | samsung | sony | nintendo | disney |
pixar | hbo | bbc | cnn | the new york times | whole foods | trader joe's | planet fitness | ymca | peace corps | greenpeace
`);

/** Last words that make a capitalised name an organisation ("Acme Corp", "Lincoln High School"). */
export const ORG_SUFFIXES = words(`
inc | corp | corporation | company | co | ltd | llc | gmbh | group | bank | university | college | school | academy | institute |
hospital | clinic | foundation | agency | studio | studios | labs | lab | systems | technologies | partners | bakery | cafe |
restaurant | center | centre | church | club | team | society | association | council | department | ministry | shelter |
museum | library | gallery | press | records | airlines | motors | pharmaceuticals | consulting | solutions | network | union
`);

/** Words before a capitalised name that make it an organisation ("at Acme", "for Initech"). */
export const ORG_CONTEXT =
  words(`work at | works at | worked at | working at | job at | joined | hired by | employed by | intern at | interning at | work for | works for | worked for | working for |
employed at | job with | position at | position with | role at | hired at | fired from | fired by | laid off from | laid off by | let go from`);

export const PRODUCTS = words(`
iphone | ipad | macbook | macbook pro | macbook air | airpods | apple watch | kindle | echo | alexa | pixel | galaxy | playstation |
playstation 5 | ps5 | xbox | nintendo switch | switch | fitbit | peloton | roomba | prius | model 3 | model y | tesla model 3 |
civic | corolla | mustang | jeep | vespa | gopro | canon eos | nikon | thinkpad | surface | chromebook | instagram | tiktok |
whatsapp | slack | zoom | photoshop | excel | notion | duolingo | minecraft | fortnite | zelda | spotify premium | netflix
`);

/** Common given names (and short forms), so a capitalised word at a sentence start can still be recognised as a person. */
export const GIVEN_NAMES = words(`
james | john | robert | michael | william | david | richard | joseph | thomas | charles | chris | christopher | daniel | matthew |
anthony | mark | donald | steven | paul | andrew | joshua | kenneth | kevin | brian | george | timothy | ronald | edward | jason |
jeffrey | ryan | jacob | gary | nicholas | eric | jonathan | stephen | larry | justin | scott | brandon | benjamin | ben | samuel |
sam | gregory | alexander | alex | frank | patrick | raymond | jack | dennis | jerry | tyler | aaron | jose | adam | nathan | henry |
peter | zachary | kyle | noah | ethan | jeremy | walter | christian | keith | roger | terry | austin | sean | gerald | carl |
harold | dylan | arthur | lawrence | jordan | jesse | bryan | billy | bruce | gabriel | joe | logan | alan | juan | albert |
willie | elijah | wayne | randy | vincent | mason | roy | ralph | bobby | russell | bradley | philip | eugene | liam | oliver |
lucas | leo | max | tom | tim | mike | dave | jim | bob | bill | nick | tony | joey | evan | ivan | omar | ali | raj | arjun |
mary | patricia | jennifer | linda | elizabeth | barbara | susan | jessica | sarah | karen | lisa | nancy | betty | sandra | margaret |
ashley | kimberly | emily | donna | michelle | carol | amanda | melissa | deborah | stephanie | dorothy | rebecca | sharon | laura |
cynthia | amy | kathleen | angela | shirley | brenda | emma | anna | pamela | nicole | samantha | katherine | kate | christine |
helen | debra | rachel | carolyn | janet | maria | catherine | heather | diane | olivia | julie | joyce | victoria | ruth |
virginia | lauren | kelly | christina | joan | evelyn | judith | andrea | hannah | megan | cheryl | jacqueline | martha | madison |
teresa | gloria | sara | janice | ann | kathryn | abigail | sophia | sophie | frances | jean | alice | judy | isabella | julia |
grace | amber | denise | danielle | marilyn | beverly | charlotte | natalie | theresa | diana | brittany | doris | kayla | alexis |
lori | marie | mia | ava | chloe | zoe | lily | ella | nora | maya | priya | aisha | fatima | yuki | mei | lena | nina | eva |
caroline | melanie | mel | jon | gina | joanna | nate | tim | john | maria | deborah | audrey | andrew | evan | sam | calvin |
dave | jolene | james | john | tanya | rosa | luis | carlos | miguel | diego | pablo | sofia | lucia | elena | ines | hans | klaus |
anke | jan | pieter | lars | ingrid | sven | olga | dmitri | hiro | kenji | sakura | wei | li | chen | jun | min | ji-woo |
kim | lee | park | beth | becky | liz | jenny | jen | katie | meg | annie | ellie | molly | rose | ruby | stella | luna | ivy
`);

export const MONTHS = words(
  `january | february | march | april | may | june | july | august | september | october | november | december | jan | feb | mar | apr | jun | jul | aug | sep | sept | oct | nov | dec`,
);
export const WEEKDAYS = words(`monday | tuesday | wednesday | thursday | friday | saturday | sunday`);
/** Relative time expressions that are dates in their own right. */
export const RELATIVE_DATES = words(`
today | yesterday | tomorrow | tonight | last night | this morning | this evening | this weekend | last weekend | next weekend |
last week | next week | this week | last month | next month | this month | last year | next year | this year | last summer |
next summer | this summer | last winter | next winter | last spring | last fall | next spring | next fall | a week ago |
two weeks ago | a month ago | a year ago | a few days ago | the other day | christmas | new year's eve | thanksgiving | easter | halloween
`);

export const NUMBER_WORDS = words(
  `one | two | three | four | five | six | seven | eight | nine | ten | eleven | twelve | fifteen | twenty | thirty | forty | fifty | hundred | thousand | a dozen | dozen`,
);
export const UNITS = words(`
years old | year old | years | year | months | month | weeks | week | days | day | hours | hour | minutes | km | kilometers |
kilometres | miles | mile | kg | kilos | kilograms | pounds | lbs | meters | metres | feet | percent | % | dollars | euros | bucks |
kids | children | dogs | cats | books | times | marathons | people | pages | cups | steps
`);

/** Capitalised words that are not names even mid-sentence. */
export const NOT_NAMES = words(`
i | i'm | i've | i'd | i'll | mom | dad | mum | god | ok | okay | tv | hi | hey | hello | yes | no | oh | wow | thanks | lol | omg |
english | spanish | french | german | italian | chinese | japanese | korean | mandarin | hindi | arabic | russian | portuguese |
christmas | easter | halloween | thanksgiving | lgbtq | lgbt | covid | internet | dr | mr | mrs | ms | prof
`);

/** British spellings of the kinds of a favourite, so "favourite colour" and "favorite color" are one attribute. */
const AMERICAN: Record<string, string> = lookupTable({
  colour: 'color',
  colours: 'colors',
  flavour: 'flavor',
  flavours: 'flavors',
  humour: 'humor',
  theatre: 'theater',
  centre: 'center',
  jewellery: 'jewelry',
  programme: 'program',
});
export const britishToAmerican = (word: string): string => AMERICAN[word] ?? word;

/** Stemmed keys (and punctuation) that end a noun phrase read after a verb: conjunctions, prepositions, time words. */
export const PHRASE_ENDS = [
  ',',
  '.',
  ';',
  ':',
  '!',
  '?',
  '(',
  ')',
  '"',
  'and',
  'but',
  'becaus',
  'so',
  'sinc',
  'when',
  'while',
  'with',
  'for',
  'at',
  'in',
  'on',
  'who',
  'that',
  'which',
  'where',
  'to',
  'last',
  'next',
  'yesterday',
  'today',
  'tomorrow',
  'anymor',
  'ani',
  'too',
  'as',
  'after',
  'befor',
  'dure',
  'than',
  'or',
  'lot',
  'now',
  'again',
  'from',
  'about',
  'of',
  'until',
  'anyway',
  'though',
  'although',
  'there',
  'here',
  'by',
  'like',
  'name',
  'call',
];

/** Stemmed keys that make a statement hypothetical or past rather than a fact about now ("want to", "used to", "might"). */
export const HEDGES = [
  'want',
  'wanna',
  'plan',
  'hope',
  'gonna',
  'might',
  'would',
  'could',
  'should',
  'if',
  'mayb',
  'use',
  'wish',
  'will',
  'may',
  'tri',
  'think',
  'consid',
  'dream',
];

/** Nouns ending in -ie, whose plural is not of a -y noun. */
const IE_NOUNS =
  /(mov|cook|self|smooth|hipp|rook|zomb|brown|vegg|goal|gen|calor|prair|sweet|aunt|room|ind|hood|newb|freeb|book|pix|cut)ies$/;

/** The head noun of a word in its singular ("movies" -> "movie", "berries" -> "berry"), lower case. */
export const singular = (word: string): string => {
  const w = word.toLowerCase();
  if (IE_NOUNS.test(w)) return w.slice(0, -1);
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith('s') && !/(ss|us|is|ics)$/.test(w)) return w.slice(0, -1);
  return w;
};

/** Words around "favorite" that do not name the kind of thing: "my new favorite", "favorite type of tea", "favorite food now". */
const NOT_THE_KIND = new Set(
  'now current currently still these days nowadays new all-time alltime absolute type types kind kinds sort sorts style styles genre genres of'.split(
    ' ',
  ),
);

/** Words for one kind of thing: "my favorite film" asks what "my favorite movie" does. */
const KIND_SYNONYMS: Record<string, string> = lookupTable({
  film: 'movie',
  flick: 'movie',
  treat: 'dessert',
  sweet: 'dessert',
  pudding: 'dessert',
  beverage: 'drink',
  cuisine: 'food',
  writer: 'author',
  novelist: 'author',
  tune: 'song',
  tv: 'show',
  series: 'show',
  meal: 'food',
  dish: 'food',
  hue: 'color',
  pastime: 'hobby',
  group: 'band',
});

/**
 * The attribute a favourite names, from the words after "favorite" (lower case): "type of tea" and "tea",
 * "dance style" and "style of dance", "movies" and "movie" give one attribute ("tea", "dance", "movie").
 */
export function favoriteKind(words: string[]): string {
  return words
    .map((w) => w.toLowerCase().replace(/[^a-z0-9-]/g, ''))
    .filter((w) => w && !NOT_THE_KIND.has(w))
    .map((w) => singular(britishToAmerican(w)))
    .map((w) => KIND_SYNONYMS[w] ?? w)
    .join('_');
}

const NEXT_TIMES = new Set([
  'week',
  'month',
  'year',
  'weekend',
  'spring',
  'summer',
  'fall',
  'autumn',
  'winter',
  'time',
]);
/** Whether stemmed keys speak of a time to come ("next month", "tomorrow", "soon"): a plan, not a fact of now. */
export const speaksOfFuture = (keys: string[]): boolean =>
  keys.some((k, i) => k === 'tomorrow' || k === 'soon' || (k === 'next' && NEXT_TIMES.has(keys[i + 1] ?? '')));
