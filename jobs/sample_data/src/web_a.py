'''Web pages for web/crawl-a.warc.gz (authored for the datapipe sample corpus).

Page fields: key, url, site (sites.SITES), date, title, body (markup: blank-line paragraphs,
`## ` headings, `- ` lists, `1. ` ordered lists, `> ` quotes, ``` code fences, `| a | b |`
tables), optional byline, comments [(name, date, text)], reviews [(name, stars, text)],
product {price, sku, specs{}} and encoding/declare_charset. `derive_from` + `ops` build the
body from another document (planted duplicates, see dups.py).
'''

PAGES = [
    {
        "key": "web/gazette_home",
        "url": "https://www.harbourgazette.co.uk/",
        "site": "gazette",
        "date": "2024-05-14",
        "title": "The Harbour Gazette - Port Alder news, sport and what's on",
        "body": """## Top stories

[Obituary: Walter Pengelly, last keeper of the Gull Rock light](/news/2024/05/02/obituary-walter-pengelly)

[Gull Rock light marks 150 years with open day and new exhibition](/news/2024/04/19/gull-rock-light-150)

[Forty homes for local families approved on former cannery site](/news/2024/04/24/cannery-homes-approved)

[Port Alder students' underwater robot wins national schools final](/news/2024/03/15/robot-wins-final)

## Sport

[Gig rowing: new season starts with record entry at St Keyne](/sport/2024/05/12/gig-season-starts)

[Port Alder Rovers clinch promotion with draw at Halden](/sport/2024/05/11/rovers-promotion)

## What's on

[Sea shanty festival returns to the harbour in June](/whats-on/2024/05/10/shanty-festival)

[Open studios: twenty artists open their doors](/whats-on/2024/05/08/open-studios)""",
    },
    {
        "key": "web/gazette_obituary",
        "url": "https://www.harbourgazette.co.uk/news/2024/05/02/obituary-walter-pengelly",
        "site": "gazette",
        "date": "2024-05-02",
        "title": "Obituary: Walter Pengelly, last keeper of the Gull Rock light",
        "derive_from": "news/keeper_obituary",
        "ops": [
            ("insert_para", 1, "Walter Pengelly at Gull Rock in 1979. Picture: family collection"),
            ("replace", "for many years the best-known storyteller", "for many years the best known storyteller"),
        ],
    },
    {
        "key": "web/gazette_gullrock150",
        "url": "https://www.harbourgazette.co.uk/news/2024/04/19/gull-rock-light-150",
        "site": "gazette",
        "date": "2024-04-19",
        "title": "Gull Rock light marks 150 years with open day and new exhibition",
        "byline": "By Martha Quayle",
        "body": """The lighthouse on Gull Rock will celebrate its 150th anniversary next month with an open day at the former keepers' store on the harbour and an exhibition of photographs, logbooks and equipment from the days when the light was staffed.

The granite tower, which stands on a reef about two miles off Port Alder, was first lit on 1 May 1874. It replaced a lightship that had been moored near the reef for twenty years and was frequently driven off station by storms. Building the tower took six summers, because the masons could work on the rock only at low water in calm weather.

For 114 years the light was kept by teams of three keepers, who lived in the tower for a month at a time. The last of them, principal keeper Walter Pengelly, died earlier this month at the age of 91. The light was automated in 1988 and is now monitored from a control centre on the mainland.

The Friends of Gull Rock Light, a charity formed in 2009, has spent three years collecting material for the exhibition. It includes the keepers' daily logbooks, which record the weather, passing ships and occasional visits by seals to the landing stage, and the brass clockwork that once turned the lens.

"We wanted to show what life in the tower was actually like," said the charity's chair, Morwenna Hocking. "It was not romantic. It was hard, repetitive work done with great care by people who knew that ships depended on them."

The open day takes place on Saturday 15 June from ten until four at the Gull Rock store on Harbour Road. Entry is free. Boat trips to see the tower from the water will run from the harbour every hour, weather permitting.""",
    },
    {
        "key": "web/gazette_classifieds",
        "url": "https://www.harbourgazette.co.uk/classifieds",
        "site": "gazette",
        "date": "2024-05-14",
        "title": "Classified adverts",
        "body": """## For sale

Wooden clinker dinghy, 12 ft, with oars and road trailer. Needs some varnish but sound. £650 ono. Call Derek on 01632 960588 evenings.

Mountain bike, adult medium frame, hardly used, new tyres. £120. Phone 07700 900217.

Logs, seasoned hardwood, builder's bag delivered within ten miles of Port Alder, £95. Ring 01632 960734.

## Wanted

Old fishing photographs and postcards of Port Alder wanted by local historian for book. Will copy and return. Email jago.history@portalder-mail.co.uk.

Allotment plot or large garden to rent, within walking distance of the old town. Please call Anna on 07700 900983.

## Services

Chimney sweep, fully certified, no mess. Bird guards fitted. Free quotes, call Pete on 01632 960152.

Piano lessons for all ages and grades from experienced teacher. First lesson free. 07700 900640.

## Lost and found

Lost: ginger cat, very friendly, answers to Biscuit, near Chapel Hill on Sunday. Reward. Please ring 01632 960905.""",
    },
    {
        "key": "web/gazette_privacy",
        "url": "https://www.harbourgazette.co.uk/privacy",
        "site": "gazette",
        "date": "2024-01-10",
        "title": "Privacy notice",
        "body": """This privacy notice explains how Harbour Gazette Media Ltd collects, uses and protects personal information when you use our websites, subscribe to our newspaper or newsletters, enter competitions, place adverts or contact our newsroom.

## Who we are

Harbour Gazette Media Ltd is the controller of the personal information described in this notice. You can contact our data protection officer by writing to the address at the foot of this page.

## What we collect

We collect information you give us directly, such as your name, address, email address and payment details when you subscribe or place an advert. We also collect information automatically when you use our websites, including your IP address, device identifiers, the pages you visit and how you interact with them, through cookies and similar technologies.

## How we use it

We use your information to provide the services you have asked for, to manage your account, to send you newsletters you have signed up to, to show you advertising, to understand how our websites are used and to improve them, and to meet our legal obligations.

## Sharing

We share information with companies that provide services to us, such as payment processors, delivery companies and technology providers, under contracts that require them to protect it. With your consent, we and our advertising partners use cookies to show you adverts that are relevant to you.

## Your rights

You have the right to ask for a copy of your information, to ask us to correct or delete it, to object to certain uses and to withdraw consent at any time. You also have the right to complain to the data protection regulator.

## Changes

We may update this notice from time to time. The date at the top of the page shows when it was last changed.""",
    },
    {
        "key": "web/gazette_tides",
        "url": "https://www.harbourgazette.co.uk/tides",
        "site": "gazette",
        "date": "2024-05-14",
        "title": "Port Alder tide times - May 2024",
        "tags": ["junk"],
        "body": "@@TIDE_TABLE@@",
    },
    {
        "key": "web/coastwise_lighthouse",
        "url": "https://www.coastwise-journal.com/2024/03/lighthouses-of-the-west-coast/",
        "site": "coastwise",
        "date": "2024-03-22",
        "title": "Lighthouse",
        "derive_from": "wiki/lighthouse",
        "ops": [
            ("prepend_para", "Before my lighthouse trip next month, here is the background I found most useful."),
            ("replace", "Although their number has declined since the arrival of satellite navigation", "Although their number has declined since satellite navigation arrived"),
            ("replace", "some of the hardest problems in civil engineering", "some of the toughest problems in civil engineering"),
            ("replace", "Lenses were graded by size into orders.", "Lenses were graded into orders by size."),
            ("replace", "sometimes for weeks at a time", "sometimes for weeks on end"),
            ("append_para", "Text adapted from the encyclopedia article, shared under CC BY-SA."),
        ],
        "comments": [
            ("Gwen", "2024-03-23", "Lovely post. If you get to Gull Rock, the Friends run boat trips out to the tower in summer, well worth it."),
            ("Rosa (author)", "2024-03-23", "Thanks Gwen! It's on the list for June."),
        ],
    },
    {
        "key": "web/coastwise_ferry",
        "url": "https://www.coastwise-journal.com/2024/04/night-ferry-to-the-islands/",
        "site": "coastwise",
        "date": "2024-04-28",
        "title": "The night ferry to the islands, and why I will take it again",
        "body": """The ferry left at eleven at night, which felt like a strange hour to begin a journey, and arrived at six the next morning, which felt even stranger. I had booked a reclining seat rather than a cabin to save money, and I spent the first hour of the crossing wandering the decks with a cup of terrible tea, watching the lights of the mainland get smaller.

There is a particular kind of quiet on an overnight ferry. Lorry drivers who do the crossing every week go straight to the cabins, families settle children under coats along the rows of seats, and a few people like me stand at the stern rail long after it stops making sense to be outside.

## What to know before you go

- Book early in summer. Cabins sell out weeks ahead, and in peak season so do the seats.
- Bring a warm layer even in July. The lounges are air-conditioned to an arctic degree.
- The café closes at midnight and opens again an hour before arrival. Pack snacks.
- If you are a light sleeper, earplugs and an eye mask will change your life.

## Arrival

We came alongside in thin grey light. The island looked exactly as I had imagined and nothing like it at the same time: low, green, scattered with white houses, and bigger than it appears on the map. The bus that meets the ferry was waiting at the end of the pier, and within twenty minutes I was eating a bacon roll in the only café in the village, which opens early for the boat.

Would I do it again? Yes, but next time I will pay for the cabin.""",
        "comments": [
            ("Tom B", "2024-04-29", "Did this crossing in 2019 and the tea was also terrible then. Some things never change!"),
            ("Ellie", "2024-05-01", "Great tips. Is the bus timed to meet every sailing or only the night one?"),
        ],
    },
    {
        "key": "web/plot22b_garlic",
        "url": "https://notesfromplot22b.org.uk/2023/10/garlic-in-modules/",
        "site": "plot22b",
        "date": "2023-10-15",
        "title": "Garlic in modules",
        "body": """Last year I planted garlic straight into the plot in October, as every book tells you to, and by February half of it had rotted in the wet clay. The half that survived gave me small, tight bulbs that I was proud of for about a week, until I saw what the man on plot 19 had grown.

So this year I am trying something different, on advice from the forum. The cloves have gone into module trays of ordinary multipurpose compost, one clove per cell, pointy end up and just covered. The trays are sitting in the cold frame, where they will get the chill they need to split into cloves but will not sit in cold water all winter.

The plan is to plant them out in February when the roots are showing at the bottom of the cells, into a ridge of soil with some grit worked in. I have gone for a hardneck variety this time, because it is supposed to cope better with cold and has a better flavour, though it does not store as long.

I have also put in a row of shallots the same way, and a tray of broad beans, because the cold frame had space and I cannot leave an empty space alone.

I will report back in the spring. If this works, the man on plot 19 had better watch out.""",
        "comments": [
            ("Margaret H.", "2023-10-16", "I've done modules for years on heavy soil and never looked back. My email is margaret.hollis58@btinternet.com if you want the name of the grit I use, the garden centre one is too fine."),
            ("Plot 22b", "2023-10-16", "Thank you Margaret, I'll drop you a line!"),
        ],
    },
    {
        "key": "web/plot22b_slugs",
        "url": "https://notesfromplot22b.org.uk/2024/05/the-slug-war/",
        "site": "plot22b",
        "date": "2024-05-19",
        "title": "The slug war",
        "body": """Forty lettuces. Thirty beans. One night.

I knew it was coming. Everyone on the site had been talking about it for a fortnight: a mild wet spring, the worst slug year anyone could remember, seedlings vanishing overnight. And still I planted out on Saturday afternoon, because the forecast said dry and the plants were getting leggy in their pots.

On Sunday morning there were stalks. Neat, green, chewed stalks, and a silvery network of trails across the soil leading to the compost bin, which is clearly where they live and plan their operations.

Since then I have been fighting back, within reason. I will not use pellets because the plot is full of frogs and there is a hedgehog that visits the leaf pile. Instead:

- Torch patrols at ten every night for a week. The first night I collected over two hundred. The fifth night, about forty.
- Beer traps, made from yoghurt pots sunk into the soil. They work, and they are disgusting to empty.
- Growing the replacement seedlings on until they are much bigger before they go out.
- Watering in the morning only, so the surface is dry by dusk.

The second batch of lettuces has been out for six days and I have lost two. I am calling that a win.""",
    },
    {
        "key": "web/ridgeway_tent",
        "url": "https://www.ridgeway-outdoor.co.uk/tents/ridgeway-trailhead-2-tent",
        "site": "ridgeway",
        "date": "2024-05-14",
        "title": "Ridgeway Trailhead 2 Backpacking Tent",
        "body": """A lightweight two-person tent for backpacking and wild camping, with two doors, two porches and a fly that pitches first so the inner stays dry in the rain.

The Trailhead 2 uses a single hubbed pole that clips together in seconds, and colour-coded clips and pegging points make it quick to pitch even in failing light. Two large side doors mean nobody has to climb over anybody at three in the morning, and each door has its own porch big enough for a rucksack and boots.

The flysheet is a silicone-coated ripstop nylon with a hydrostatic head of 3,000 mm, and all seams are taped. Vents at each end reduce condensation on still nights.

## Specifications

| Berths | 2 |
| Packed weight | 1.68 kg |
| Minimum weight | 1.42 kg |
| Packed size | 45 x 15 cm |
| Flysheet | 20D ripstop nylon, silicone/PU, 3000 mm HH |
| Groundsheet | 30D nylon, 5000 mm HH |
| Poles | DAC aluminium, hubbed |
| Pitch | Flysheet first or all-in-one |

## What's in the box

Tent, poles, 14 pegs, spare guylines, repair sleeve and stuff sack.""",
        "product": {"price": "£289.00", "was": "£329.00", "sku": "RW-TH2-GRN", "stock": "In stock - order within 5 hrs for next day delivery"},
        "reviews": [
            ("Hillwalker Dave", 5, "Used it for a week on the coast path in mixed weather. Pitches fast, kept us dry in a proper downpour, and the two doors are a marriage saver."),
            ("Sophie R", 4, "Great tent for the weight. Condensation on a still night by a river was noticeable, but that is true of any single-skin-ish design. Wish the pegs were better."),
            ("Anon", 2, "Arrived with a bent pole section. Customer service replaced it quickly, but annoying before a trip."),
        ],
    },
    {
        "key": "web/ridgeway_headlamp",
        "url": "https://www.ridgeway-outdoor.co.uk/lighting/lumo-400-headlamp",
        "site": "ridgeway",
        "date": "2024-05-14",
        "title": "Lumo 400 Rechargeable Headlamp",
        "body": """A bright, comfortable rechargeable headlamp for running, walking and camping, with a maximum output of 400 lumens and a red night-vision mode.

The Lumo 400 charges over USB-C in about three hours and shows the remaining battery on a four-step indicator, so you are never surprised by a flat lamp halfway down a hill. A lock mode prevents it from switching on in your pack.

The lamp has five modes: high, medium, low, flashing and red. On low it runs for up to 60 hours, on high for about three and a half. A reactive mode uses a light sensor to adjust the brightness automatically, saving battery when you look at a map and throwing more light when you look down the trail.

The soft, wide headband is washable and has a reflective strip at the back, and the lamp tilts through 60 degrees. It is rated IPX4, so it will cope with rain but should not be submerged.

## Specifications

| Maximum output | 400 lumens |
| Beam distance | 95 m |
| Battery | 1800 mAh lithium-ion, built in |
| Charging | USB-C, about 3 hours |
| Run time | 3.5 h (high), 60 h (low) |
| Water resistance | IPX4 |
| Weight | 82 g |""",
        "product": {"price": "£39.99", "sku": "RW-LUMO400", "stock": "In stock"},
        "reviews": [
            ("Night runner", 5, "Bright, stays put when running and the battery indicator is genuinely useful."),
            ("K. Brown", 4, "Good lamp. Red mode is a bit dim but fine in the tent."),
        ],
    },
    {
        "key": "web/ridgeway_lighting",
        "url": "https://www.ridgeway-outdoor.co.uk/lighting/",
        "site": "ridgeway",
        "date": "2024-05-14",
        "title": "Headlamps, torches and lanterns",
        "body": """Showing 1-12 of 38 products. Sort by: Recommended | Price low to high | Price high to low | Newest | Top rated

- Lumo 400 Rechargeable Headlamp - £39.99 - 4.6 stars (212)
- Lumo 250 Headlamp - £24.99 - 4.4 stars (98)
- Petra Trail 900 Running Headlamp - £89.00 - 4.8 stars (56)
- Ridgeway Basic Headlamp - £9.99 - 3.9 stars (301)
- Kinder Camp Lantern - £29.99 - 4.5 stars (44)
- Glowbug Kids' Headlamp - £14.99 - 4.7 stars (120)
- Tor Pocket Torch 150 - £19.99 - 4.3 stars (37)
- Stormproof Lantern XL - £49.00 - 4.2 stars (18)
- Spare 18650 Battery - £12.99 - 4.5 stars (65)
- Headlamp Replacement Strap - £6.99 - 4.0 stars (12)
- Solar Fairy Lights 3 m - £11.99 - 4.1 stars (88)
- Emergency Strobe Light - £15.99 - 4.6 stars (23)

Load more""",
    },
    {
        "key": "web/thrifty_leek_soup",
        "url": "https://www.thriftykitchen.co.uk/recipes/leek-and-potato-soup",
        "site": "thrifty",
        "date": "2023-11-02",
        "title": "Leek and potato soup",
        "body": """This is the soup I make more than any other, from September to March, and it costs less than a pound a portion even now. It needs no stock cubes if you do not have any, though a good one helps, and it freezes beautifully.

The secret is to cook the leeks slowly in butter until they are completely soft and sweet before the potatoes go in. Rushing this step gives you a thinner, sharper soup. Ten minutes of patience makes all the difference.

## Ingredients (serves 4)

- 3 medium leeks, about 500 g, trimmed and sliced
- 30 g butter or 2 tbsp oil
- 1 onion, chopped
- 2 medium potatoes, about 400 g, peeled and diced
- 1 litre vegetable or chicken stock
- 100 ml milk or single cream
- Salt, pepper and a grating of nutmeg

## Method

1. Wash the sliced leeks thoroughly in a colander, as grit hides between the layers.
2. Melt the butter in a large pan over a low heat. Add the leeks and onion with a pinch of salt, cover and cook gently for 10 to 15 minutes, stirring now and then, until very soft but not browned.
3. Add the potatoes and the stock, bring to the boil, then simmer for 15 to 20 minutes until the potatoes are tender.
4. Blend until smooth, or mash roughly if you prefer a chunky soup. Stir in the milk and heat through without boiling.
5. Season with salt, pepper and nutmeg, and serve with crusty bread.

## Tips

Keep a few slices of leek aside, fry them until crisp and scatter them on top. The soup keeps for three days in the fridge and three months in the freezer. If it thickens on standing, loosen it with a splash of water.""",
        "comments": [
            ("Bev", "2023-11-05", "Made this tonight, the slow leeks really do make it. Added a bit of mustard at the end."),
        ],
    },
    {
        "key": "web/thrifty_cardamom_buns",
        "url": "https://www.thriftykitchen.co.uk/recipes/cardamom-buns",
        "site": "thrifty",
        "date": "2024-02-09",
        "title": "Cardamom buns",
        "body": """These knotted buns are my attempt at the ones that sell out by ten o'clock at a small bakery in Holmbridge. They are not quite the same, but they are very good, and the house smells wonderful while they bake.

Crushing your own cardamom makes a big difference. Split the pods, tip out the black seeds and grind them with a pestle and mortar. Ready-ground cardamom loses its fragrance quickly.

## Ingredients (makes 12)

- 500 g strong white flour
- 7 g fast-action yeast
- 75 g caster sugar
- 1 tsp ground cardamom, plus 1 tsp for the filling
- 250 ml milk, warmed
- 75 g soft butter
- 1 egg, beaten, plus extra for glazing
- For the filling: 100 g soft butter, 75 g light brown sugar
- Pearl sugar to finish

## Method

1. Mix the flour, yeast, sugar, cardamom and a pinch of salt. Add the milk, butter and egg and knead for ten minutes until smooth and elastic.
2. Cover and leave to rise for an hour, or until doubled in size.
3. Beat the filling ingredients together. Roll the dough into a large rectangle, spread the filling over it, fold in three like a letter and roll out again slightly.
4. Cut into twelve strips, twist each one and tie it into a knot. Place on lined trays and leave to rise for 30 minutes.
5. Brush with egg, sprinkle with pearl sugar and bake at 200C for 12 to 15 minutes until golden.""",
    },
    {
        "key": "web/quillstack_getting_started_24",
        "url": "https://quillstack.dev/docs/2.4/getting-started/",
        "site": "quillstack",
        "date": "2022-09-14",
        "title": "Getting started - Quillstack 2.4",
        "body": """This guide walks you through installing Quillstack, creating a new documentation project and building it into a website you can preview on your own computer.

## Installation

Quillstack 2.4 requires Python 3.7 or later. Install it from the package index with pip:

```
pip install "quillstack>=2.4,<2.5"
```

Check that the installation worked:

```
quill --version
```

## Creating a project

Create a new project with the init command. It asks a few questions and writes a configuration file called quill.ini, an index page and a folder for static files.

```
quill init my-docs
cd my-docs
```

The quill.ini file holds the project name, the theme and the list of plugins. Each page is a text file in the pages folder, and the file name becomes part of the URL.

## Building and previewing

Build the site with:

```
quill build
```

The HTML is written to the _site folder. To preview it with automatic reloading while you edit, run:

```
quill serve
```

and open http://127.0.0.1:8000 in your browser. The server rebuilds only the pages you change, so it stays fast on large projects.

## Next steps

Read about cross-references to link pages to each other, and about API pages to document your Python code automatically. When you are ready to publish, see the deployment guide.""",
    },
    {
        "key": "web/quillstack_getting_started_30",
        "url": "https://quillstack.dev/docs/3.0/getting-started/",
        "site": "quillstack",
        "date": "2023-06-01",
        "title": "Getting started - Quillstack 3.0",
        "derive_from": "web/quillstack_getting_started_24",
        "ops": [
            ("replace", "This guide walks you through installing Quillstack, creating a new documentation project and building it into a website you can preview on your own computer.",
             "This guide walks you through installing Quillstack 3, creating a project with the new declarative configuration and building a site you can preview locally. If you are upgrading from 2.x, read the migration guide first."),
            ("replace_para", 2, "Quillstack 3.0 requires Python 3.9 or later. We recommend installing it into a virtual environment with pip or pipx:"),
            ("replace", "quillstack>=2.4,<2.5", "quillstack>=3.0,<3.1"),
            ("replace_para", 7, "Create a new project with the new command. It writes a single declarative file called quill.toml, an index page and a folder for static files. The old quill.ini format is no longer read; run quill migrate in a 2.x project to convert it."),
            ("replace_para", 8, "```\nquill new my-docs\ncd my-docs\n```"),
            ("replace", "The quill.ini file holds", "The quill.toml file holds"),
            ("append_para", "## Upgrading from 2.x\n\nVersion 3 removes several deprecated options and renames the init command to new. Most projects can be converted automatically with quill migrate, which writes quill.toml next to your old quill.ini and prints anything it could not convert."),
        ],
    },
    {
        "key": "web/quillstack_deploy",
        "url": "https://quillstack.dev/docs/3.0/deploying/",
        "site": "quillstack",
        "date": "2023-06-01",
        "title": "Deploying your site - Quillstack 3.0",
        "body": """A Quillstack site is a folder of static files, so it can be hosted almost anywhere: a web server you run yourself, an object storage bucket, or a static hosting service that builds from your repository.

## Object storage

The built-in publish command uploads the build/html folder to an S3-compatible bucket. Credentials are never stored in quill.toml. Instead, Quillstack reads them from the environment or from your cloud provider's standard credentials file:

```
export AWS_ACCESS_KEY_ID="<your access key id>"
export AWS_SECRET_ACCESS_KEY="<your secret key>"
quill publish --bucket docs-example-bucket --region eu-west-1
```

Only files whose content hash has changed since the last publish are uploaded. The upload manifest is stored as .quill-manifest.json in the bucket, so several people can publish the same site without uploading everything each time.

## Continuous integration

Most projects build and publish from CI. Pin the Quillstack version in your requirements so that builds are reproducible, for example quillstack==3.0.2, and cache the .quill-cache folder between runs. A typical job takes under a minute for a site of a few hundred pages.

## Build identifiers

Each build writes a build-info.json file with the Quillstack version, the commit of your repository (for example 9f2c1e7b4d0a6c3e8b5f1a2d7c4e9b0a3f6d8e21) and a unique build id such as 3f1b2c9e-7d4a-4e8b-9c61-2a5f0d7e8b13. Themes can show these in the page footer.

## Custom domains

When you host on your own domain, remember to serve the site over HTTPS and to set the base_url option, so that canonical links and the sitemap use the right address.""",
    },
    {
        "key": "web/kuestenbote_faehre",
        "url": "https://www.kuestenbote.de/lokales/2024/05/08/neue-faehre-fuer-die-insellinie",
        "site": "kuestenbote",
        "date": "2024-05-08",
        "title": "Neue Fähre für die Insellinie: Taufe im Juni",
        "byline": "Von Henrike Albers",
        "body": """Die Insellinie bekommt eine neue Fähre. Das Schiff, das in einer Werft an der Unterweser gebaut wurde, soll im Juni getauft werden und ab Juli die bisherige Fähre ersetzen, die seit mehr als vierzig Jahren im Einsatz ist.

Die neue Fähre ist 62 Meter lang und bietet Platz für 400 Fahrgäste und 45 Autos. Angetrieben wird sie von einem Hybridsystem aus Dieselmotoren und Batterien. Im Hafen und im flachen Wattenfahrwasser soll sie ausschließlich elektrisch fahren, was Lärm und Abgase deutlich verringert. Geladen werden die Batterien während der Liegezeit am Anleger über eine neue Landstromanlage.

„Für die Insulanerinnen und Insulaner ist die Fähre die Lebensader“, sagte Reederei-Geschäftsführer Jan Ohlsen bei einer Besichtigung auf der Werft. „Wir haben bei der Planung viel Wert darauf gelegt, dass sie zuverlässig ist und auch bei niedrigem Wasserstand fahren kann.“ Der Tiefgang des Schiffes beträgt nur 1,6 Meter.

An Bord gibt es ein größeres Bordrestaurant, einen Bereich für Fahrräder und erstmals einen barrierefreien Zugang zu allen Fahrgastdecks über einen Aufzug. Die Kosten für den Neubau liegen bei rund 28 Millionen Euro, das Land beteiligt sich mit einem Zuschuss.

Die alte Fähre soll nach Angaben der Reederei verkauft werden. Interessenten aus Skandinavien hätten sich bereits gemeldet. Die Taufe findet am 15. Juni im Hafen statt, die Öffentlichkeit ist eingeladen.""",
    },
    {
        "key": "web/wanderlust_kuestenweg",
        "url": "https://www.wanderlust-nord.de/touren/kuestenweg-etappe-3/",
        "site": "wanderlust",
        "date": "2024-04-20",
        "title": "Küstenweg Etappe 3: Vom Leuchtturm zum Sielhafen",
        "body": """Die dritte Etappe des Küstenwegs ist mit knapp 19 Kilometern die längste, aber auch die abwechslungsreichste. Sie beginnt am alten Leuchtturm, führt zunächst auf der Deichkrone nach Osten und biegt dann ins Binnenland ab, wo man durch Wiesen und an Entwässerungsgräben entlang zum kleinen Sielhafen wandert.

Ich bin an einem windigen Apriltag gestartet, mit Rückenwind zum Glück. Auf dem Deich ist man dem Wetter völlig ausgesetzt, es gibt keinen Baum und keinen Unterstand. Dafür ist der Blick über das Watt großartig, vor allem bei Niedrigwasser, wenn Tausende von Vögeln auf den Schlickflächen nach Nahrung suchen. Ein Fernglas lohnt sich.

## Praktische Hinweise

- Länge: 18,7 km, Höhenmeter: kaum der Rede wert
- Dauer: etwa 5 Stunden reine Gehzeit
- Einkehr: ein Kiosk am Leuchtturm (nur am Wochenende) und ein Café im Sielhafen
- Rückfahrt: Bus ab Sielhafen stündlich, sonntags alle zwei Stunden
- Während der Lammzeit im Frühjahr bitte keine Hunde auf dem Deich

Nach etwa zwölf Kilometern verlässt der Weg den Deich. Der Abschnitt durch das Grünland ist bei Regen matschig, hier sind wasserdichte Schuhe Pflicht. Im Sielhafen habe ich mir zur Belohnung ein Krabbenbrötchen gegönnt und den Kuttern beim Einlaufen zugesehen.

Fazit: Eine lange, aber entspannte Etappe für alle, die Weite mögen.""",
    },
    {
        "key": "web/margot_tarte",
        "url": "https://www.la-cuisine-de-margot.fr/tarte-aux-pommes-normande/",
        "site": "margot",
        "date": "2023-10-01",
        "title": "Tarte aux pommes normande",
        "body": """La tarte aux pommes normande, c'est la tarte de mon enfance : des pommes fondantes sur une pâte brisée, recouvertes d'une crème à l'œuf et au calvados qui dore au four. Ma grand-mère la préparait chaque dimanche d'automne avec les pommes du verger.

Choisissez des pommes qui se tiennent à la cuisson, comme la reinette ou la boskoop. Les pommes trop juteuses rendent de l'eau et détrempent la pâte.

## Ingrédients (pour 6 personnes)

- 1 pâte brisée
- 4 pommes
- 2 œufs
- 80 g de sucre
- 20 cl de crème fraîche
- 1 cuillère à soupe de calvados (facultatif)
- 1 sachet de sucre vanillé

## Préparation

1. Préchauffez le four à 200 °C. Étalez la pâte dans un moule beurré et piquez le fond à la fourchette.
2. Épluchez les pommes, coupez-les en quartiers puis en lamelles épaisses et disposez-les en rosace sur la pâte.
3. Enfournez pour 15 minutes.
4. Pendant ce temps, battez les œufs avec le sucre, le sucre vanillé, la crème et le calvados.
5. Versez la crème sur les pommes et remettez au four pour 25 à 30 minutes, jusqu'à ce que le dessus soit bien doré.

Servez tiède, éventuellement avec une boule de glace à la vanille. Bon appétit !""",
        "comments": [("Claire", "2023-10-03", "Testée ce week-end, un régal ! J'ai mis un peu de cannelle."),
                     ("Margot", "2023-10-03", "Merci Claire, bonne idée la cannelle !")],
    },
    {
        "key": "web/saintaubin_marche_latin1",
        "url": "https://www.gazette-saint-aubin.fr/actualite/marche-nocturne",
        "site": "saintaubin",
        "date": "2011-07-08",
        "title": "Le marché nocturne revient sur le quai des Pêcheurs",
        "encoding": "latin-1",
        "declare_charset": False,
        "body": """Après deux ans d'absence, le marché nocturne fait son retour cet été sur le quai des Pêcheurs. Chaque jeudi soir de juillet et d'août, de 18 heures à 23 heures, une cinquantaine d'exposants proposeront produits du terroir, artisanat et spécialités de la mer.

L'association des commerçants, qui organise l'événement, a choisi de privilégier les producteurs locaux : on trouvera des fromages de chèvre de la presqu'île, du cidre fermier, des galettes préparées sur place et, bien sûr, des huîtres de la baie. Des musiciens animeront les soirées, et les enfants pourront profiter d'un manège à l'ancienne installé près de la criée.

« Les habitants nous réclamaient ce marché depuis longtemps », explique la présidente de l'association, Françoise Le Bihan. « C'est un moment de rencontre entre les gens d'ici et les vacanciers, et c'est important pour les commerces du centre. »

La circulation sera interdite sur le quai à partir de 17 heures les soirs de marché. Un parking gratuit est prévu près de la salle des fêtes.""",
    },
    {
        "key": "web/mochila_camino",
        "url": "https://www.mochila-y-brujula.es/blog/camino-del-norte-etapa-1/",
        "site": "mochila",
        "date": "2024-05-05",
        "title": "Camino del Norte, etapa 1: de Irún a San Sebastián",
        "body": """La primera etapa del Camino del Norte tiene fama de dura, y la fama es merecida. Son unos veinticinco kilómetros con subidas largas, pero el paisaje compensa cada gota de sudor: acantilados, prados verdes que caen hasta el mar y, al final, la bahía de la Concha apareciendo entre los árboles.

Salí de Irún temprano, con niebla, y subí hacia el santuario de Guadalupe por un sendero empinado. Desde allí el camino recorre la ladera del monte Jaizkibel, con vistas al Cantábrico durante horas. Hay pocas fuentes en este tramo, así que conviene llevar al menos dos litros de agua.

## Consejos prácticos

- Distancia: unos 25 km, con casi 800 metros de desnivel acumulado.
- Agua: rellena en Irún y en Pasai Donibane; en el monte apenas hay fuentes.
- La bajada a Pasaia es muy pronunciada y resbala con lluvia.
- Para cruzar la bahía de Pasaia hay que coger una pequeña lancha; el billete cuesta menos de un euro.

Llegué a San Sebastián con las piernas destrozadas y una sonrisa enorme. Después de una ducha en el albergue, unos pintxos en la parte vieja fueron la mejor recompensa. Mañana, rumbo a Zarautz.""",
        "comments": [("Javi", "2024-05-06", "¡Qué envidia! Yo la hice en 2019 con lluvia y casi me rompo la crisma bajando a Pasaia. Buen camino."),],
    },
    {
        "key": "web/junk_linkfarm",
        "url": "https://best-deals-online-2024.biz/hiking/",
        "site": "junk",
        "date": "2024-05-01",
        "title": "Best Hiking Deals Online 2024 | Cheap Hiking | Hiking Boots | Hiking Tents | Hiking Sale",
        "body": "@@LINK_FARM@@",
    },
    {
        "key": "web/junk_lorem",
        "url": "https://www.lorem-site-builder.com/demo/about-us",
        "site": "junk",
        "date": "2024-04-30",
        "title": "About Us - Your Company Name",
        "body": """## About Our Company

Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.

Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.

## Our Mission

Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium doloremque laudantium, totam rem aperiam, eaque ipsa quae ab illo inventore veritatis et quasi architecto beatae vitae dicta sunt explicabo.

Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur magni dolores eos qui ratione voluptatem sequi nesciunt.

## Our Team

Lorem ipsum dolor sit amet, consectetur adipiscing elit. Integer nec odio. Praesent libero. Sed cursus ante dapibus diam. Sed nisi. Nulla quis sem at nibh elementum imperdiet.

Click here to edit this text. Replace with your own content.""",
    },
]
