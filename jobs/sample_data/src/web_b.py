'''Web pages for web/crawl-b.warc.gz (authored for the datapipe sample corpus). Same fields as web_a.'''

PAGES = [
    {
        "key": "web/courier_tide_mill",
        "url": "https://www.midlandcourier.co.uk/heritage/2024/06/11/halden-tide-mill-to-grind-again",
        "site": "courier",
        "date": "2024-06-11",
        "title": "Halden tide mill to grind flour again after £600,000 restoration",
        "derive_from": "wiki/tide_mill",
        "ops": [
            ("drop_para", 4),
            ("drop_para", 4),
            ("drop_para", 4),
            ("prepend_para", "The last working tide mill on the Halden estuary will grind flour again this summer for the first time since 1938, after a three-year restoration by a volunteer trust. The mill's new oak water wheel, built by a specialist millwright, was lowered into place last week, and the first public milling day is planned for 6 July, when the tides are right."),
            ("insert_para", 1, "Trust chair Helen Armitage said the project had been a race against the tide in more ways than one. \"You can only work on the wheel pit for a few hours around low water,\" she said. \"Our volunteers have spent a lot of very early mornings standing in mud.\""),
            ("insert_para", 2, "For readers unfamiliar with how such a mill works, the principle is simple."),
            ("append_para", "The Halden mill was built in the 1790s and ground corn for the surrounding farms until the 1930s, when the mill pond silted up and the miller retired. The building was used as a boat store for decades. The restoration was funded by a heritage grant, a crowdfunding appeal and the sale of flour-themed merchandise, and the trust hopes to sell its own stoneground flour in the mill shop from the autumn."),
            ("append_para", "Milling demonstrations will take place on selected days throughout the summer. Dates depend on the tide tables and will be published on the trust's website."),
        ],
    },
    {
        "key": "web/junk_soft404",
        "url": "https://www.midlandcourier.co.uk/local/2024/02/30/calder-bridge-closure",
        "site": "courier",
        "date": "2024-05-20",
        "title": "Page not found",
        "body": """## Sorry, we couldn't find that page

The page you are looking for may have been moved, deleted or possibly never existed.

Try searching for it, or go back to the homepage.

Error 404""",
    },
    {
        "key": "web/gearbargains_headlamp",
        "url": "https://www.gearbargains-direct.com/p/lumo-400-rechargeable-headlamp-9921",
        "site": "gearbargains",
        "date": "2024-05-20",
        "title": "Lumo 400 Rechargeable Headlamp - 400 Lumen USB-C LED Head Torch",
        "derive_from": "web/ridgeway_headlamp",
        "ops": [
            ("replace", "should not be submerged", "should not be submergd"),
        ],
        "product": {"price": "€41.95", "was": "€54.99", "sku": "GB-9921", "stock": "Only 3 left! Ships in 24 hours"},
        "reviews": [
            ("Verified buyer", 5, "Super bright!!! fast shipping"),
            ("mark_t", 3, "ok for price. strap bit loose."),
        ],
    },
    {
        "key": "web/homelab_nas_spinup",
        "url": "https://forum.homelab-commons.net/t/nas-drives-spinning-up-every-few-minutes/2210",
        "site": "homelab",
        "date": "2024-03-04",
        "title": "NAS drives spinning up every few minutes",
        "posts": [
            ("brambling", "2024-03-04", """I've set the drives in my four-bay NAS to spin down after 20 minutes, but they spin up again every five minutes or so, all night. It's in the bedroom cupboard and the noise is driving my partner mad. Anyone know how to find what's waking them?"""),
            ("vlan_vicar", "2024-03-04", """Usually something polling the disks: a media server scanning libraries, a SMART check, or a client on the network browsing shares. Turn on the disk access log if your NAS has one. Mine showed a laptop with a mapped drive checking the share every few minutes."""),
            ("brambling", "2024-03-05", """Found it. The access log showed requests from 192.168.1.34, which is the smart TV's media app re-indexing the share constantly. There were also a couple of connection attempts from 45.83.104.212 - turns out UPnP had opened a port on the router. Disabled UPnP, turned off the TV's auto-scan, drives now sleep all night."""),
            ("vlan_vicar", "2024-03-05", """Classic. Worth going through the router's port forwards while you're at it. If you want a second pair of eyes on your config, drop me a line at vlan.vicar@protonmail.com."""),
        ],
    },
    {
        "key": "web/homelab_ups",
        "url": "https://forum.homelab-commons.net/t/which-ups-for-a-small-rack/2231",
        "site": "homelab",
        "date": "2024-04-11",
        "title": "Which UPS for a small rack?",
        "posts": [
            ("rackmouse", "2024-04-11", """My little rack draws about 180 W: a mini PC, a four-bay NAS, a switch and the router. We get short power cuts a few times a year. What size UPS do I need, and is a line-interactive one good enough?"""),
            ("vlan_vicar", "2024-04-11", """For 180 W, a 1000 to 1500 VA line-interactive unit will give you ten to twenty minutes, which is plenty to shut down cleanly. Line-interactive is fine for home use. The important bit is to connect it by USB to the NAS and set up automatic shutdown, otherwise the UPS just delays the crash. Pure sine wave output is nice to have if your power supplies have active PFC."""),
            ("rackmouse", "2024-04-13", """Got a 1500 VA unit, NAS acts as the UPS server and tells the mini PC to shut down over the network. Tested by pulling the plug: everything went down cleanly after five minutes on battery."""),
        ],
    },
    {
        "key": "web/council_christmas_bins",
        "url": "https://www.holmbridge-council.gov.uk/bins/christmas-collections",
        "site": "council",
        "date": "2023-12-01",
        "title": "Christmas and New Year bin collections",
        "body": """Bin collections will change over Christmas and New Year. Please check the table below for your revised collection day, and put your bin out by 7am.

| Normal collection day | Revised collection day |
| Monday 25 December | Wednesday 27 December |
| Tuesday 26 December | Thursday 28 December |
| Wednesday 27 December | Friday 29 December |
| Thursday 28 December | Saturday 30 December |
| Friday 29 December | Tuesday 2 January |
| Monday 1 January | Wednesday 3 January |

Collections return to normal from Monday 8 January.

## Christmas trees

Real Christmas trees can be put out next to your garden waste bin during the weeks of 8 and 15 January. Please remove all decorations, lights and pots, and cut trees taller than 1.5 metres in half.

## Extra recycling

We will collect one extra bag of cardboard next to your recycling bin on your first collection after Christmas. Please flatten boxes. Wrapping paper with glitter or foil cannot be recycled and should go in your general waste bin.

## Household waste recycling centres

The recycling centres at Northgate and Halden Road will be closed on 25 and 26 December and 1 January. On all other days they will be open from 8am to 4pm.

## Contact us

If your bin is missed, report it online within two working days of your revised collection. For other enquiries call our customer services team on 01632 960220 (Monday to Friday, 9am to 5pm).""",
    },
    {
        "key": "web/gullrock_support",
        "url": "https://www.friendsofgullrock.org.uk/support-us/",
        "site": "gullrock",
        "date": "2024-02-15",
        "title": "Support us",
        "body": """The Friends of Gull Rock Light receives no public funding for its day-to-day work. Everything we do, from caring for the keepers' store and its collection to running open days and school visits, is paid for by members, donors and the sale of our calendars and prints.

## Become a member

Membership costs £20 a year for an individual and £30 for a household. Members receive our newsletter three times a year, free entry to talks and priority booking for boat trips to the tower.

## Make a donation

You can donate online using the button at the top of the page, or by bank transfer. Our account details are:

Account name: Friends of Gull Rock Light
IBAN: GB71 LOYD 3096 3452 0718 46
Please use the reference DONATION and your surname.

If you are a UK taxpayer, please complete a Gift Aid declaration so that we can claim an extra 25p for every pound you give.

## Leave a gift in your will

A gift in your will, however small, helps to keep the story of the light alive for future generations. If you would like to talk about leaving a gift, please contact our treasurer, Alan Trebilcock, in confidence on 01632 960777 or by email at treasurer@friendsofgullrock.org.uk.

## Volunteer

We are always looking for volunteers to staff the store on open days, help with the archive and guide school groups. No experience is needed, just enthusiasm.""",
    },
    {
        "key": "web/translator_home",
        "url": "https://www.ines-moreau-traductions.eu/en/",
        "site": "personal",
        "date": "2024-01-22",
        "title": "Inès Moreau - French, English and German translation",
        "body": """I am a freelance translator working from French and German into English, and from English into French. I specialise in scientific and heritage texts: museum panels and catalogues, research papers, grant applications and popular science books.

Before becoming a full-time translator in 2014, I worked for eight years as an assistant curator at a maritime museum in Brittany, which is why museums and archives make up a large part of my work. I hold a master's degree in translation and a doctorate in the history of science.

## Services

- Translation of exhibition texts, catalogues and audio guides
- Translation and language editing of research articles and theses
- Subtitles for documentary films
- Proofreading of translations done by others

## Recent projects

Recent work includes the English edition of a catalogue of nineteenth-century botanical watercolours, the French audio guide for a fishing museum in Norway, and subtitles for a documentary about lighthouse keepers.

## Contact

The easiest way to reach me is by email at contact@ines-moreau-traductions.eu. You can also call me on +33 6 12 48 90 37 (I am in Brest, Central European Time). I usually reply within one working day.""",
    },
    {
        "key": "web/plumber_contact",
        "url": "https://www.brightwaterplumbing.com/contact/",
        "site": "plumber",
        "date": "2024-03-30",
        "title": "Contact Brightwater Plumbing & Heating - Chicago Plumbers",
        "body": """Need a plumber today? Our licensed technicians are available 24 hours a day, 7 days a week, for emergencies including burst pipes, sewer backups and no-heat calls. For routine work, book online or call during office hours and we will give you a two-hour arrival window.

## Call us

Emergency line (24/7): (312) 555-0148
Office: 773-555-0162, Monday to Friday 7am to 6pm, Saturday 8am to 2pm

## Email

For quotes and non-urgent questions, email service@brightwaterplumbing.com with a short description of the problem and, if you can, a photo. Our office manager, Linda Kowalski, reads every message and will get back to you the same business day.

## Visit

Our showroom at 2219 W Irving Park Rd displays water heaters, fixtures and water filtration systems. Parking is available behind the building.

## Before we arrive

If you have a leak, shut off the water at the main valve, usually found near the water meter in the basement. If you smell gas, leave the building immediately and call the gas company's emergency number from outside.

We are proud to serve homeowners and businesses across the North Side and the near western suburbs. Ask about our maintenance plan, which includes an annual water heater flush and a 15% discount on repairs.""",
    },
    {
        "key": "web/uni_events",
        "url": "https://marine.westcoast-uni.ac.uk/events/",
        "site": "uni",
        "date": "2024-05-01",
        "title": "Events - School of Marine Sciences",
        "body": """## Upcoming seminars

Wednesday 15 May, 4pm, Lecture Theatre 2 and online. Dr Amara Lowe: Planting a million seeds - lessons from seagrass restoration on the western coast. Restoration of seagrass meadows has moved from small trials to large-scale planting. This talk describes what has worked, what has not, and why patience matters.

Wednesday 22 May, 4pm, Lecture Theatre 2. Prof. Erik Nygaard: Cod on the move - warming seas and the northward shift of fish stocks. Using decades of survey data, the speaker shows how the distribution of cod and other commercial species has changed and discusses the consequences for fisheries management.

Wednesday 29 May, 4pm, online only. Dr Sian Penrose: Counting otters from their droppings - genetic methods for estimating population size in rivers.

## Public events

Saturday 8 June, 10am to 3pm, Harbour Campus. Open day: visit the teaching labs and aquarium, meet our researchers and take a tour of the research vessel. Free, no booking needed. Family activities all day.

Thursday 20 June, 7pm, Port Alder Seamen's Institute. Science in the pub: What lives in Port Alder harbour? Join our PhD students for a short talk and a look down the microscope at plankton collected from the harbour that morning.

## Recordings

Recordings of past seminars are available to members of the university on the intranet. Public talks are published on our video channel.""",
    },
    {
        "key": "web/museum_visit",
        "url": "https://www.varnholm-museum.no/en/visit/",
        "site": "museum",
        "date": "2024-04-02",
        "title": "Visit the Varnholm Museum",
        "body": """The Varnholm Museum occupies one of the timber warehouses on the harbour front, built during the herring boom of the nineteenth century and one of the few buildings in the town centre to survive the fire of 1904.

Our permanent exhibitions tell the story of the town through the herring fishery, the canning factory that employed generations of Varnholm women, and the lighthouse on the island of Skarv. New for this season is a reconstructed cannery workshop with a working steam-powered can sealer, demonstrated daily at 12:00 and 14:00.

## Opening hours

May to September: daily 10:00-17:00
October to April: Saturdays and Sundays 11:00-16:00
Closed 24-26 December and 1 January. During the lamp festival in December the museum is open late on Saturday until 21:00.

## Admission

Adults NOK 120, students and seniors NOK 90, children under 16 free. Tickets can be bought at the door; card payment only.

## Getting here

The museum is a five-minute walk from the bus station and the ferry quay. There is no parking at the museum, but the public car park on Strandgata is close by.

## Accessibility

The ground floor, including the cannery workshop, is accessible to wheelchair users. The upper floor, with the lighthouse exhibition, is reached by a steep staircase; a video tour is available on a tablet at the reception desk.""",
    },
    {
        "key": "web/slowwalker_lost",
        "url": "https://www.theslowwalker.net/essays/on-getting-lost/",
        "site": "slowwalker",
        "date": "2024-02-18",
        "title": "On getting lost",
        "body": """I got properly lost for the first time in years last month, on a moor I thought I knew. The cloud came down in the way it does up there, not gradually but all at once, as if someone had drawn a curtain, and within ten minutes the path I had been following had divided, faded and disappeared into a landscape of identical tussocks.

The phone in my pocket could have told me where I was, of course. I had a map on it, and a blue dot that would have placed me to within a few metres. But I had promised myself at the start of the year that I would try to walk without it, using the paper map and the compass I had carried unused for a decade, and this seemed a poor moment to give up.

What struck me, sitting on a damp rock with the map spread on my knees, was how unfamiliar the experience had become. Not the fear, which was mild, but the attention. For twenty minutes I looked at the ground and the slope and the direction of the streams more carefully than I had looked at anything outdoors in years. I noticed that the water all ran to my left, which meant I was on the north side of the ridge and not the south. I noticed a line of old grouse butts that appeared on the map as a row of tiny marks. I took a bearing, walked it, counted my paces, and came down out of the cloud within a few hundred metres of where I had hoped.

We talk about getting lost as a failure, and in the mountains it can be a dangerous one. But there is a smaller, more ordinary kind of lostness that I think we have almost engineered out of our lives, and I am not sure we are better for it. It is the condition in which you have to read the world directly, because nothing is reading it for you.

I still carry the phone. I am not a fool. But it stays in the bottom of the bag now, and I have started to enjoy those moments at a junction of paths when I do not immediately know which way to go.""",
        "comments": [("Ann W", "2024-02-19", "Beautifully put. I learned to navigate with a map and compass as a Guide and it is one of the most useful things I ever learned.")],
    },
    {
        "key": "web/fahrradladen_werkstatt",
        "url": "https://www.fahrradladen-hansen.de/werkstatt/",
        "site": "fahrradladen",
        "date": "2024-03-01",
        "title": "Werkstatt und Service",
        "body": """In unserer Meisterwerkstatt reparieren und warten wir Fahrräder und E-Bikes aller Marken, nicht nur die bei uns gekauften. Unsere fünf Mechanikerinnen und Mechaniker sind für die gängigen E-Bike-Systeme geschult und können Software-Updates und Fehlerdiagnosen direkt bei uns durchführen.

## Inspektion

Wir empfehlen eine Inspektion einmal im Jahr, am besten vor Beginn der Saison. Dabei prüfen wir Bremsen, Schaltung, Lager, Laufräder und Beleuchtung, stellen alles neu ein und schmieren die Kette. Die Grundinspektion kostet 69 Euro, bei E-Bikes 89 Euro inklusive Systemcheck. Verschleißteile berechnen wir nach Aufwand und sprechen größere Reparaturen vorher mit Ihnen ab.

## Termine

Im Frühjahr ist die Werkstatt oft für zwei bis drei Wochen im Voraus ausgebucht. Bitte vereinbaren Sie rechtzeitig einen Termin, persönlich im Laden oder telefonisch unter 0471 / 30 94 412. Kleine Reparaturen wie einen Schlauchwechsel erledigen wir meist sofort, während Sie warten.

## Impressum

Fahrradladen Hansen GmbH, Hafenstraße 41, 27568 Bremerhaven
Telefon: +49 471 3094412, E-Mail: werkstatt@fahrradladen-hansen.de
Bankverbindung: Sparkasse Bremerhaven, IBAN DE13 2905 0110 0412 8377 65
USt-IdNr.: DE 284 117 903""",
    },
    {
        "key": "web/forohuerto_pulgon",
        "url": "https://www.foro-huerto.es/t/pulgon-negro-en-las-habas/381",
        "site": "forohuerto",
        "date": "2024-04-16",
        "title": "Pulgón negro en las habas",
        "posts": [
            ("huertana_pili", "2024-04-16", """Buenas a todos. Las habas que sembré en noviembre están preciosas, llenas de flor, pero desde hace una semana las puntas están cubiertas de pulgón negro. ¿Qué puedo hacer sin usar productos químicos?"""),
            ("tomatero_luis", "2024-04-16", """Lo más sencillo es despuntar las habas: corta los últimos diez centímetros de cada planta, que es donde se concentra el pulgón. Además la planta deja de crecer hacia arriba y engorda mejor las vainas. Las puntas tiernas se pueden cocinar salteadas, están buenísimas. Si queda pulgón, un chorro de agua con un poco de jabón potásico funciona bien."""),
            ("huertana_pili", "2024-04-18", """He despuntado todas y ya casi no queda pulgón. Y las puntas salteadas con ajo, un descubrimiento. ¡Gracias!"""),
        ],
    },
    {
        "key": "web/babcia_pierogi",
        "url": "https://www.kuchnia-babci-zosi.pl/przepisy/pierogi-ruskie/",
        "site": "babcia",
        "date": "2023-12-10",
        "title": "Pierogi ruskie według babci Zosi",
        "body": """Pierogi ruskie to danie, które u nas w domu pojawiało się na stole co najmniej raz w tygodniu. Babcia Zosia lepiła je szybciej, niż ktokolwiek z nas potrafił je zjeść, a przepis zapisany jej ręką wciąż leży w starym zeszycie w kuchni.

Najważniejszy jest dobry twaróg, najlepiej półtłusty, i ziemniaki, które po ugotowaniu są suche i mączyste. Farsz musi całkowicie wystygnąć, zanim zaczniemy lepić.

## Składniki na ciasto

- 500 g mąki pszennej
- 250 ml ciepłej wody
- 2 łyżki oleju
- szczypta soli

## Składniki na farsz

- 500 g ugotowanych ziemniaków
- 300 g twarogu
- 2 duże cebule
- sól i dużo czarnego pieprzu

## Przygotowanie

1. Cebulę pokrój w kostkę i zeszklij na maśle. Połowę dodaj do farszu, resztę zostaw do podania.
2. Ziemniaki przeciśnij przez praskę, dodaj twaróg i cebulę, dopraw solą i pieprzem.
3. Z mąki, wody, oleju i soli zagnieć gładkie ciasto. Rozwałkuj je cienko i wykrawaj szklanką krążki.
4. Na każdy krążek nałóż łyżeczkę farszu, złóż na pół i dokładnie sklej brzegi.
5. Gotuj w osolonym wrzątku przez około dwie minuty od wypłynięcia.

Podawaj z podsmażoną cebulką i kwaśną śmietaną. Smacznego!""",
    },
    {
        "key": "web/cornercafe_cp1252",
        "url": "https://www.thecornercafe-portalder.co.uk/menu.html",
        "site": "cornercafe",
        "date": "2011-03-14",
        "title": "The Corner Café \u2013 Menu",
        "encoding": "cp1252",
        "declare_charset": False,
        "body": """## Welcome to The Corner Café!

We\u2019re a family run café at the top of Fore Street, open since 1986. Everything is home made by Sue and her daughter Karen, and the scones come out of the oven at 9 o\u2019clock every morning \u2013 get here early!

## Breakfasts (served until 11.30)

- Full Cornish breakfast \u2013 \u00a36.95
- Bacon or sausage bap \u2013 \u00a33.20
- Two eggs on toast \u2013 \u00a33.50
- Porridge with honey \u2013 \u00a32.80

## Lunches

- Homemade soup of the day with a roll \u2013 \u00a34.25
- Crab sandwich, when the boats are in \u2013 \u00a36.50
- Jacket potato with cheese and beans \u2013 \u00a34.75
- Ploughman\u2019s lunch \u2013 \u00a35.95

## Cream teas

Two scones with clotted cream and jam, and a pot of tea \u2013 \u00a34.50. We always put the jam on first. Don\u2019t argue with Sue about this.

Continental visitors welcome \u2013 we take euros at \u20ac1.10 to the pound for cash payments. Sorry, no cards under \u00a35.

\u201cBest cream tea on the coast\u201d \u2013 a very kind visitor in our guestbook, 2009.""",
    },
    {
        "key": "web/junk_seo_spam",
        "url": "https://cheap-hiking-boots-sale.shop/",
        "site": "junk",
        "date": "2024-05-18",
        "title": "Cheap Hiking Boots Sale - Best Cheap Hiking Boots Online - Hiking Boots Cheap",
        "body": "@@SEO_SPAM@@",
    },
    {
        "key": "web/junk_coming_soon",
        "url": "https://www.harbour-holiday-lets.com/",
        "site": "junk",
        "date": "2024-05-18",
        "title": "Coming soon",
        "body": """Coming soon!""",
    },
    {
        "key": "web/lumenforge_press",
        "url": "https://www.lumenforge.io/news/series-b-funding",
        "site": "lumenforge",
        "date": "2024-05-21",
        "title": "Lumenforge Raises $38 Million Series B to Build First Commercial Recycling Plant",
        "body": """OAKLAND, Calif., May 21, 2024 - Lumenforge, a developer of low-temperature recycling technology for lithium-ion batteries, today announced the close of a $38 million Series B financing round. The round was led by an infrastructure investment fund, with participation from all existing investors.

The funds will be used to build the company's first commercial-scale facility, which will process end-of-life electric vehicle batteries and manufacturing scrap into battery-grade lithium, nickel and cobalt salts.

"Every battery we recover is a battery's worth of metal that doesn't have to be mined," said Lumenforge co-founder and CEO Dr. Maya Okonkwo. "This financing lets us move from a pilot line to a plant that operates at industrial scale, and it shows that investors see recycling as core infrastructure for the energy transition."

Lumenforge's process dissolves the black mass recovered from shredded batteries in water-based solutions at near-ambient temperatures and separates the metals by selective precipitation. In pilot operation, the process has recovered more than 95 percent of the lithium in the feed material.

The new facility is expected to begin operation in 2026 and to process the equivalent of about 20,000 electric vehicle batteries per year at full capacity.

## About Lumenforge

Lumenforge was founded in 2020 and is headquartered in Oakland, California. The company's technology was developed from research carried out at a university chemistry department.

## Media contact

Dana Whitfield
Head of Communications
dana.whitfield@lumenforge.io
+1 (628) 555-0173""",
    },
]

# Non-HTML and other non-document responses. `kind` selects the payload generator in build.py.
SPECIAL = [
    {"key": "web/gazette_logo_png", "warc": "a", "url": "https://www.harbourgazette.co.uk/static/img/logo.png", "kind": "png"},
    {"key": "web/gazette_robots", "warc": "a", "url": "https://www.harbourgazette.co.uk/robots.txt", "kind": "robots"},
    {"key": "web/gazette_redirect", "warc": "a", "url": "http://harbourgazette.co.uk/", "kind": "redirect",
     "location": "https://www.harbourgazette.co.uk/"},
    {"key": "web/council_budget_pdf", "warc": "b", "url": "https://www.holmbridge-council.gov.uk/documents/budget-summary-2024.pdf", "kind": "pdf"},
]
