"""News articles for news-1.jsonl (authored for the datapipe sample corpus).

Entries with `derive_from` are copies of another article with edits (`ops`, applied by
build.derive) - the planted near/exact duplicates. See dups.py for the groups.
"""

ARTICLES = [
    {
        "key": "news/harbour_dredging_syndicated",
        "outlet": "cpa",
        "date": "2024-02-14",
        "derive_from": "news/harbour_dredging",
        "headline": "Dredger to clear silted Port Alder harbour under new council deal",
        "ops": [
            ("replace", "By Martha Quayle, Local Democracy Reporter", "By Martha Quayle, Local Democracy Reporting Service"),
            ("replace", "investigate a longer breakwater", "investigate a longer breakwtaer"),
            ("append_para", "This story was supplied by the Local Democracy Reporting Service."),
        ],
    },
    {
        "key": "news/ferry_strike_resent",
        "outlet": "cpa",
        "date": "2024-03-02",
        "derive_from": "news/ferry_strike",
        "ops": [],
    },
    {
        "key": "news/flood_followup",
        "outlet": "gazette",
        "date": "2024-05-14",
        "derive_from": "news/flood_defences",
        "headline": "Port Alder flood wall plans go to planners after record response",
        "ops": [
            ("drop_para", 1),
            ("insert_para", 1, "A revised version of the scheme was submitted to the council's planning department on Monday, after a consultation that drew more than 1,400 responses, the largest number ever received for a planning matter in the town."),
            ("insert_para", 2, "The Environment Office said it had changed the design in response to comments. The wall in front of the Harbour Terrace will now include three glazed panels so that residents on the ground floor keep a view of the sea, and the height of the wall at the western end of the promenade has been reduced by twenty centimetres after further modelling of wave heights."),
            ("drop_para", 8),
            ("append_para", "A decision is expected from the planning committee in September. If the plans are approved, a contractor will be appointed over the winter and work will start in the spring of 2025, beginning at the harbour end so that the barriers are in place before the following winter's storms."),
            ("append_para", "Residents can view the revised plans at the town hall and in the library, and comment until 30 June."),
        ],
    },
    {
        "key": "news/es_mercado",
        "outlet": "diario",
        "date": "2024-02-22",
        "headline": "El Mercado Central reabrirá en otoño tras dos años de obras",
        "body": """Por Lucía Ferrer

El Mercado Central, cerrado desde hace casi dos años por obras de rehabilitación, volverá a abrir sus puertas en octubre, según anunció ayer el Ayuntamiento. La reforma, que ha costado 9,3 millones de euros, ha permitido sustituir la cubierta de hierro y cristal, renovar las instalaciones eléctricas y adaptar el edificio a personas con movilidad reducida.

Los comerciantes, que durante las obras han trabajado en una carpa provisional en la plaza de San Lorenzo, recibieron la noticia con alivio. «Han sido dos inviernos muy duros, con frío y con muchos menos clientes», explicó Manuel Ortega, que regenta una pescadería desde hace treinta años. «Tenemos ganas de volver a nuestra casa».

El nuevo mercado contará con cuarenta y dos puestos, cuatro más que antes, y con una zona de restauración en la planta superior donde los clientes podrán comer productos comprados en el propio mercado. También se ha instalado un sistema de recogida selectiva de residuos orgánicos, que se convertirán en compost para los huertos urbanos del barrio.

La concejala de Comercio, Elena Marín, destacó que la adjudicación de los puestos se hará por concurso público y que se dará prioridad a los productores locales. Las personas interesadas pueden pedir información en la oficina municipal de mercados, en el teléfono +34 976 54 32 10, o por correo electrónico en mercados@ayto-valdecea.es.

La inauguración está prevista para el 12 de octubre, coincidiendo con las fiestas del barrio.""",
    },
    {
        "key": "news/fr_fete",
        "outlet": "saintaubin",
        "date": "2024-04-03",
        "headline": "Saint-Aubin : la fête de la coquille Saint-Jacques attire 20 000 visiteurs",
        "body": """La quatorzième fête de la coquille Saint-Jacques a battu tous les records ce week-end sur le port de Saint-Aubin. Selon les organisateurs, plus de vingt mille personnes se sont pressées sur les quais malgré un vent frais et quelques averses dimanche matin.

Les pêcheurs ont vendu près de huit tonnes de coquilles en deux jours, directement depuis leurs bateaux. Les restaurateurs de la ville proposaient des dégustations, et le concours de la meilleure recette a été remporté par un jeune cuisinier de vingt-deux ans, Hugo Le Gall, avec des noix snackées au beurre demi-sel et une purée de panais.

« C'est une fête qui appartient à tout le monde ici, les marins, les commerçants, les bénévoles », a souligné la maire, Anne-Sophie Guillou. « Elle montre que la pêche reste au cœur de l'identité de notre ville. »

Les animations pour les enfants, les visites du port en vedette et le concert de chants de marins du samedi soir ont également fait le plein. Seul bémol, les difficultés de stationnement aux entrées de la ville, où de longues files se sont formées samedi en fin de matinée. La mairie promet des navettes gratuites depuis les parkings extérieurs l'an prochain.

Les bénévoles qui souhaitent rejoindre l'équipe d'organisation peuvent contacter le comité des fêtes au +33 2 97 41 58 63.""",
    },
    {
        "key": "news/letters",
        "outlet": "gazette",
        "date": "2024-02-20",
        "headline": "Letters to the editor",
        "body": """Dredging is not enough

Sir, I read with interest that the council has agreed to dredge the harbour again (Gazette, 13 February). My grandfather used to say that the harbour mouth silted up within a few years of the old wooden groyne being removed after the war. Has anyone looked at whether putting it back would save us paying for dredging every ten years?

Harold Jago, Chapel Hill

Thank you to the lifeboat crew

Sir, On behalf of the residents of Harbour Terrace I would like to thank the volunteers of the lifeboat and the council workers who were out in the worst of Storm Hester. They did not have to be there at two in the morning, but they were.

Mary Tonkin, Harbour Terrace

Parking at the hospital

Sir, Is there any chance that the new car park at the community hospital will be finished before my knee replacement, or indeed before I need a second one?

D. Rowe, Trewin Road

Bus shelter on Quay Street

Sir, The bus shelter on Quay Street has now been without a roof for four months. Pensioners waiting for the 41 have taken to standing in the doorway of the bank, which is closed on Wednesdays. Could someone at the council please look out of the window?

Jean Polglase, Quay Street""",
    },
    {
        "key": "news/roadworks",
        "outlet": "courier",
        "date": "2024-05-28",
        "headline": "Halden Road to close for three weeks for resurfacing",
        "body": """The Halden Road between the Mill Lane roundabout and the Calder Water bridge will close to traffic for three weeks from 10 June while the road is resurfaced and drainage is replaced.

The work will take place between 7pm and 6am on weekdays to reduce disruption, with the road reopening during the day. A signed diversion will run through Upper Holmbridge and will add about ten minutes to journeys. Access for residents and emergency vehicles will be maintained at all times.

The county highways department said the road had one of the worst records for potholes in the district, and that the new surface should last at least fifteen years.

Bus services 41 and 42 will follow the diversion in the evenings and will not serve the stops at Mill Lane and Bridge End after 7pm.

Questions about the work can be sent to the contractor's community liaison officer, Kerry Oldroyd, on 07700 900461 or by email to halden.road@northwayhighways.co.uk.""",
    },
    {
        "key": "news/windfarm_inquiry",
        "outlet": "courier",
        "date": "2024-06-04",
        "headline": "Public inquiry opens into Calder Edge wind farm",
        "body": """A public inquiry into plans for a wind farm of nine turbines on moorland above the Calder valley opened on Tuesday, with supporters and objectors packing the council chamber in Holmbridge.

The developer appealed after the district council refused planning permission last year, saying the turbines, each up to 149 metres tall to the tip of the blades, would harm the landscape and the setting of the heritage railway. The developer argues that the wind farm would generate enough electricity for about 24,000 homes and provide a community fund worth £180,000 a year for twenty-five years.

The inquiry heard evidence from landscape experts for both sides, who disagreed over how visible the turbines would be from the valley floor and from walking routes on the moor. A representative of the Calder Valley Railway told the inspector that the society was neutral on the wind farm but asked for construction traffic to be kept off the road to Calder Head station on days when trains are running.

A local farmer who would host three of the turbines said the rent would allow his family to keep farming the land. A walkers' group said the moor was one of the last places in the district where people could experience open country without man-made structures.

The inquiry is expected to last eight days, after which the inspector will report to ministers, who will make the final decision.""",
    },
    {
        "key": "news/otters",
        "outlet": "cpa",
        "date": "2024-06-11",
        "headline": "Otters return to every stretch of the River Astel, survey finds",
        "body": """Otters have been found along the entire length of the River Astel for the first time since surveys began, a sign that the river's water quality has improved markedly over the past three decades, researchers said.

Teams of volunteers searched for otter droppings, known as spraints, and footprints at sixty sites between the river's source on the Kalvfjell plateau and its mouth at Varnholm. Signs of otters were found at every site, compared with fewer than a third of sites in the first survey in 1991.

Otters declined across much of Europe in the second half of the twentieth century, largely because of pesticides that accumulated in the fish they eat. The banning of those chemicals, improvements in sewage treatment and the protection of riverbank habitat have allowed them to recover.

Researchers cautioned that the results did not necessarily mean the population had reached its former size, because a single otter can range over many kilometres of river. They plan to use genetic analysis of spraints to estimate the number of individual animals.

Anglers on the Astel have reported more frequent sightings in recent years, including otters hunting in the harbour at Varnholm in daylight.""",
    },
    {
        "key": "news/regatta",
        "outlet": "gazette",
        "date": "2023-08-28",
        "headline": "Mousehole Cove crew snatch gig race victory on final stroke",
        "body": """The traditional gig race at the Feast of St. Odran produced one of its closest finishes in years on Sunday afternoon, with the Mousehole Cove crew beating the home team from Port Alder by less than a boat's length.

Nine six-oared gigs started the race from the harbour mouth, rounding a buoy off Gull Rock and returning to finish between the pierheads. Port Alder led for most of the course and turned the buoy with a lead of about three lengths, but the Cove crew closed steadily on the return leg and drew level in the final hundred metres.

"We could hear the crowd on the harbour wall but we didn't dare look across," said Cove coxswain Becky Hoskin. "It was only when the horn went that we knew we'd done it."

Port Alder stroke Danny Vivian said his crew had no complaints. "They rowed a better second half than us," he said. "We'll be back next year."

The women's race was won by the Port Alder crew in a time of 24 minutes 12 seconds, and the veterans' race by a combined crew from the two villages of St Keyne and Polgooth.""",
    },
    {
        "key": "news/heatwave",
        "outlet": "cpa",
        "date": "2023-07-17",
        "headline": "Health warning issued as temperatures set to pass 33C",
        "body": """Health authorities have issued an amber heat-health alert for much of the south and east, with temperatures forecast to reach 33 to 35 degrees Celsius on Wednesday and Thursday.

The alert means that hot weather is likely to affect the whole population, not only people who are most at risk, and that health and social care services may see increased demand. Older people, young children and people with heart or lung conditions are particularly vulnerable.

People are advised to stay out of the sun during the hottest part of the day, between eleven and three, to keep windows closed and curtains drawn on the sunny side of the house, to drink plenty of fluids and to check on neighbours who live alone.

Water companies urged customers to use water wisely, saying demand had reached record levels in some areas. Fire services warned against barbecues and campfires on dry moorland and heath, where several fires have already broken out this month.

Forecasters expect the heat to ease at the weekend, when thundery showers will move in from the west.""",
    },
    {
        "key": "news/marrow_exhibition",
        "outlet": "gazette",
        "date": "2024-03-27",
        "headline": "Elsbeth Marrow's coastal watercolours go on show for the first time in a century",
        "body": """Forty watercolours of coastal plants by the Port Alder botanist Elsbeth Marrow are on show at the town museum, the first time many of them have been exhibited since 1908.

Marrow, who died in 1919, is best known among scientists for her catalogue of the mosses of the western coast, but she also painted hundreds of studies of plants from the salt marshes and dunes near her home. The paintings were stored for decades in the university herbarium that holds her collection and were rediscovered during a cataloguing project in 2021.

The exhibition places the watercolours alongside pages from her notebooks, her microscope and a selection of her pressed specimens. Curator Lowenna Hicks said visitors were often surprised by the delicacy of the work. "She was painting for accuracy, not for effect, and yet these are really beautiful pictures," she said.

A book of the paintings, with an introduction by Ms Hicks, is published to coincide with the exhibition (Alder Press, ISBN 978-1-9163-4522-7, £18). The exhibition runs until 29 September and entry is free.""",
    },
    {
        "key": "news/market_report",
        "outlet": "cpa",
        "date": "2024-05-31",
        "headline": "Markets close: shares edge higher, oil slips",
        "body": """Shares edged higher on Friday, ending a volatile week with modest gains as investors weighed mixed economic data and comments from central bank officials.

The main European index closed up 0.4 per cent at 4,987.21, while the blue-chip index in London rose 0.3 per cent to 8,275.38. Frankfurt gained 0.2 per cent and Paris was little changed.

Brent crude fell 1.1 per cent to $81.62 a barrel. Gold rose 0.5 per cent to $2,348.70 an ounce. The dollar weakened slightly against the euro, which traded at $1.0846, and sterling was steady at $1.2741.

Government bond yields were little changed: the ten-year benchmark yield stood at 2.66 per cent in Germany and 4.32 per cent in Britain.

Among individual shares, utilities and food retailers led the gains, while mining companies fell with metal prices. The parent group of the online retailer Ridgeway Outdoor Supply rose 2.4 per cent after reporting that sales had recovered since the data breach disclosed in February.

For the week, the main European index gained 0.9 per cent.""",
    },
    {
        "key": "news/corrections",
        "outlet": "gazette",
        "date": "2024-02-16",
        "headline": "Corrections and clarifications",
        "body": """In our report on the harbour dredging contract (13 February) we said that harbour dues would rise by 18 per cent. The correct figure is 8 per cent. We apologise for the error.

An article on 9 February gave the wrong date for the Seamen's Institute quiz night. It is on 1 March.""",
    },
    {
        "key": "news/varnholm_museum",
        "outlet": "cpa",
        "date": "2024-06-20",
        "headline": "Restored cannery workshop opens at Varnholm museum",
        "body": """A reconstructed cannery workshop, complete with a working steam-powered can sealer, opened on Thursday at the Varnholm Museum, in one of the timber warehouses on the town's harbour front.

The canning factory was Varnholm's largest employer for most of the twentieth century, at its peak employing more than three hundred people, most of them women, who packed sprats and herring into tins by hand. It closed in 1971, and much of its machinery was sold for scrap.

Museum staff spent three years tracking down surviving equipment from former employees, scrap yards and a museum in another country, and volunteers restored the can sealer, which had spent forty years in a barn. Oral histories recorded with former workers play in the background, describing the noise, the smell of fish and oil, and the friendships formed on the packing line.

"Everyone in Varnholm has a mother or a grandmother who worked at the cannery," said museum director Kari Fjeld. "We wanted to tell their story properly, in their own words."

The museum is open daily from May to September and at weekends during the rest of the year.""",
    },
]
