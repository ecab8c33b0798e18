"""Reference tables the PII validators check candidates against.

Kept as literals (not read from files) so that a worker needs nothing besides the
code; each table says where its content comes from so it can be refreshed.
"""

from __future__ import annotations

#: ITU-T E.164 country calling codes in service (the set is prefix-free, so a digit
#: string has at most one country-code prefix). Source: ITU-T E.164 Annex list.
COUNTRY_CODES: frozenset[str] = frozenset(
    """
    1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58
    60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98
    211 212 213 216 218 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235
    236 237 238 239 240 241 242 243 244 245 246 247 248 249 250 251 252 253 254 255 256
    257 258 260 261 262 263 264 265 266 267 268 269 290 291 297 298 299
    350 351 352 353 354 355 356 357 358 359 370 371 372 373 374 375 376 377 378 380 381
    382 383 385 386 387 389 420 421 423
    500 501 502 503 504 505 506 507 508 509 590 591 592 593 594 595 596 597 598 599
    670 672 673 674 675 676 677 678 679 680 681 682 683 685 686 687 688 689 690 691 692
    800 808 850 852 853 855 856 870 880 881 882 883 886
    960 961 962 963 964 965 966 967 968 970 971 972 973 974 975 976 977 992 993 994 995
    996 998
    """.split()
)

#: Length of the national significant number (digits after the country code, trunk
#: prefix removed) for the countries whose plans are fixed-length or narrow; other
#: countries use ``DEFAULT_NSN_LENGTH``.
NSN_LENGTHS: dict[str, tuple[int, int]] = {
    "1": (10, 10), "7": (10, 10), "20": (8, 10), "27": (9, 9), "30": (10, 10),
    "31": (9, 9), "32": (8, 9), "33": (9, 9), "34": (9, 9), "36": (8, 9), "39": (6, 11),
    "40": (9, 9), "41": (9, 9), "43": (4, 13), "44": (9, 10), "45": (8, 8), "46": (7, 10),
    "47": (8, 8), "48": (9, 9), "49": (6, 13), "52": (10, 10), "55": (10, 11),
    "61": (9, 9), "62": (8, 12), "63": (8, 10), "64": (8, 10), "65": (8, 8), "66": (8, 9),
    "81": (9, 10), "82": (8, 10), "86": (10, 11), "90": (10, 10), "91": (10, 10),
    "351": (9, 9), "352": (6, 11), "353": (7, 9), "358": (6, 12), "420": (9, 9),
}
DEFAULT_NSN_LENGTH: tuple[int, int] = (7, 12)

#: IBAN length per country (SWIFT IBAN registry).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27,
    "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28,
    "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

#: Generic top-level domains accepted at the end of an e-mail address. Every
#: two-letter (country-code) TLD is accepted as well. Longer TLDs not listed here are
#: refused, which keeps ``x@self.weight`` (matrix code) and ``logo@2x.png`` out.
GENERIC_TLDS: frozenset[str] = frozenset(
    """
    com net org edu gov mil int info biz name pro aero coop museum mobi asia tel travel
    jobs cat post arpa
    academy accountant accountants actor adult agency airforce amsterdam apartments app
    archi army art associates attorney auction audio auto autos baby band bank bar
    barcelona bargains bayern beer berlin best bet bid bike bingo bio black blog blue
    boston boutique build builders business buzz cab cafe cam camera camp capital car
    cards care career careers cars casa cash casino catering center ceo charity chat
    cheap christmas church city claims cleaning click clinic clothing cloud club coach
    codes coffee college community company computer condos construction consulting
    contractors cooking cool country coupons courses credit creditcard cricket cruises
    cymru dance date dating day deals degree delivery democrat dental dentist design dev
    diamonds diet digital direct directory discount doctor dog domains download earth
    eco education email energy engineer engineering enterprises equipment estate eus
    events exchange expert exposed express fail faith family fan fans farm fashion film
    finance financial fish fit fitness flights florist flowers football forsale
    foundation free fun fund furniture futbol fyi gal gallery game games garden gay
    gift gifts gives glass global gmbh gold golf google graphics gratis green gripe
    group guide guitars guru hamburg haus health healthcare help hiphop hiv hockey
    holdings holiday homes horse hospital host hosting house how icu immo immobilien inc
    industries ink institute insure international investments irish jetzt jewelry juegos
    kaufen kim kitchen kiwi koeln land lat law lawyer lease legal lgbt life lighting
    limited limo link live llc loan loans lol london love ltd luxury maison management
    market marketing mba media melbourne memorial men menu miami moda mom money monster
    mortgage moscow movie music nagoya navy network new news ngo ninja nrw nyc observer
    okinawa one onl online ooo organic osaka page paris partners parts party pet phd
    photo photography photos pics pictures pink pizza place plumbing plus poker porn
    press productions prof promo properties property pub quebec racing radio recipes
    red rehab reise reisen rent rentals repair report republican rest restaurant review
    reviews rich rip rocks rodeo ruhr run saarland sale salon sarl school schule science
    scot services sex sexy shoes shop shopping show singles site ski soccer social
    software solar solutions space srl store stream studio study style sucks supplies
    supply support surf surgery swiss sydney systems taipei tattoo tax taxi team tech
    technology tennis theater theatre tickets tienda tips tires today tokyo tools top
    tours town toys trade trading training tube university uno vacations vegas ventures
    vet viajes video villas vin vip vision vlaanderen vodka vote voting voto voyage
    wales wang watch webcam website wedding wien wiki win wine work works world wtf xyz
    yoga yokohama zone
    """.split()
)

#: Domains reserved for documentation and testing (RFC 2606 / RFC 6761): addresses
#: there belong to nobody, and e-mail pseudonyms are drawn from them.
RESERVED_EMAIL_DOMAINS: frozenset[str] = frozenset({"example.com", "example.net", "example.org"})
RESERVED_EMAIL_TLDS: frozenset[str] = frozenset({"example", "test", "invalid", "localhost", "local"})

#: Regions (ISO 3166 alpha-2, as ``phonenumbers`` names them) whose numbering plans a
#: national-format number (no ``+``) is checked against: the 30 most populous
#: countries (UN 2023), then the rest of the EU and a few other large plans.
PHONE_REGIONS: tuple[str, ...] = (
    "IN", "CN", "US", "ID", "PK", "NG", "BR", "BD", "RU", "ET", "MX", "JP", "EG", "PH", "CD", "VN", "IR", "TR",
    "DE", "TH", "GB", "TZ", "FR", "ZA", "IT", "KE", "MM", "CO", "KR", "ES",
    "AR", "DZ", "SD", "UG", "UA", "IQ", "CA", "PL", "MA", "SA", "UZ", "PE", "MY", "AU", "NL", "BE", "SE", "CZ",
    "GR", "PT", "HU", "AT", "CH", "DK", "FI", "IE", "RO", "BG", "HR", "SK", "SI", "LT", "LV", "EE", "NO",
)
