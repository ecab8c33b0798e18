'''WET conversion records for wet/sample-00000.warc.wet.gz (authored for the datapipe sample corpus).

Plain text as a crawler's HTML-to-text conversion produces it: one line per block element,
navigation and footer lines included. `derive_from` + `ops` (part "full" = title + body)
build a record from another document.
'''

RECORDS = [
    {
        "key": "wet/varnholm_mirror",
        "url": "https://www.nordic-towns-guide.com/places/varnholm",
        "date": "2024-05-22T03:11:09Z",
        "lang": "eng",
        "derive_from": "wiki/varnholm",
        "part": "body",
        "ops": [],
    },
    {
        "key": "wet/gazette_gullrock150",
        "url": "https://www.harbourgazette.co.uk/news/2024/04/19/gull-rock-light-150",
        "date": "2024-05-22T03:14:51Z",
        "lang": "eng",
        "derive_from": "web/gazette_gullrock150",
        "part": "full",
        "ops": [
            ("prepend_para", "Skip to main content\nThe Harbour Gazette\nNews Sport What's On Opinion Tide Times Subscribe"),
            ("insert_para", 2, "By Martha Quayle"),
            ("append_para", "Most read\nStorm Hester: roofs torn off and power cut to 3,000 homes\n© 2024 Harbour Gazette Media Ltd."),
        ],
    },
    {
        "key": "wet/varnholm_lamps_truncated",
        "url": "https://www.fjordcoast-today.com/2023/12/18/varnholm-lamp-festival-record-crowds",
        "date": "2024-05-22T03:20:40Z",
        "lang": "eng",
        "derive_from": "news/varnholm_lamps",
        "part": "full",
        "ops": [
            ("drop_para", 7),
            ("append_para", "Continue reading"),
        ],
    },
    {
        "key": "wet/shop_category",
        "url": "https://www.basecampwarehouse.co.uk/camping/stoves/",
        "date": "2024-05-22T03:25:02Z",
        "lang": "eng",
        "text": """Basecamp Warehouse | Camping Stoves
Menu
Search
Account
Basket 0
Camping
Walking
Climbing
Clothing
Footwear
Sale
Home > Camping > Stoves
Camping Stoves
Whether you are boiling water for a brew on a summit or cooking for the whole family at a campsite, our range of stoves covers every trip. Choose a compact gas canister stove for backpacking, a multi-fuel stove for expeditions where gas is hard to find, or a double-burner stove for car camping.
Filter by: Brand Fuel type Weight Price
42 products
Sort: Best sellers
Trailmate Micro Gas Stove £34.99
Trailmate Micro Gas Stove with Piezo £42.99
Summit Integrated Cook System 1.0 L £119.00
Expedition Multi-Fuel Stove £149.00
Family Double Burner £79.99
Windshield, Aluminium £12.50
Gas Canister 230 g £5.99
Gas Canister 450 g £8.49
Load more
Free delivery on orders over £50
Sign up to our newsletter
About us Careers Stores Delivery Returns Privacy Terms
© 2024 Basecamp Warehouse Ltd""",
    },
    {
        "key": "wet/sportverein",
        "url": "https://www.tsv-deichhausen.de/aktuelles/saisonabschluss-2024",
        "date": "2024-05-22T03:29:18Z",
        "lang": "deu",
        "text": """TSV Deichhausen von 1908 e.V.
Startseite Verein Abteilungen Termine Kontakt
Saisonabschluss der Fußballjugend
Am vergangenen Samstag feierte unsere Fußballjugend den Abschluss der Saison mit einem großen Turnier auf dem Sportplatz am Deich. Mehr als hundert Kinder und Jugendliche aus sieben Mannschaften spielten bei strahlendem Sonnenschein um Pokale und Urkunden.
Besonders freuen wir uns über die D-Jugend, die in dieser Saison ungeschlagen die Meisterschaft in ihrer Staffel gewonnen hat. Trainer Lars Meiners lobte den Zusammenhalt der Mannschaft: „Die Jungs und Mädchen haben das ganze Jahr füreinander gekämpft. Das ist mehr wert als jeder Pokal.“
Ein herzlicher Dank geht an alle Eltern, die Kuchen gebacken, Würstchen gegrillt und beim Aufbau geholfen haben, sowie an unsere Sponsoren, ohne die neue Trikots für alle Jugendmannschaften nicht möglich gewesen wären.
Das Training für die neue Saison beginnt nach den Sommerferien. Neue Spielerinnen und Spieler sind jederzeit willkommen. Ansprechpartner ist unser Jugendleiter Dirk Osterloh, erreichbar unter 04741 / 92 18 36.
Impressum Datenschutz""",
    },
    {
        "key": "wet/rhubarb_crumble",
        "url": "https://www.kitchen-garden-cook.com/recipes/rhubarb-and-ginger-crumble/",
        "date": "2024-05-22T03:33:47Z",
        "lang": "eng",
        "text": """Rhubarb and ginger crumble
Serves 6. Prep 15 minutes. Cook 40 minutes.
Forced rhubarb arrives in late winter, pink and tender, and by May the garden rhubarb is ready, thicker and sharper. Either works here. A little stem ginger gives the filling warmth without overpowering the fruit, and oats and demerara sugar give the topping a proper crunch.
Ingredients
800 g rhubarb, cut into 3 cm lengths
80 g caster sugar
2 balls stem ginger, finely chopped, plus 2 tbsp of the syrup
For the crumble: 150 g plain flour, 100 g cold butter, 75 g demerara sugar, 50 g rolled oats
Method
Heat the oven to 190C. Toss the rhubarb with the caster sugar, ginger and syrup and spread it in a baking dish.
Rub the butter into the flour until it looks like coarse breadcrumbs, then stir in the sugar and oats. Scatter the crumble evenly over the fruit without pressing it down.
Bake for 35 to 40 minutes until the top is golden and the juices are bubbling up at the edges. Leave to stand for ten minutes before serving with custard or cream.
Jump to recipe Print Save""",
    },
    {
        "key": "wet/cookie_wall",
        "url": "https://www.regional-daily-news.com/",
        "date": "2024-05-22T03:36:02Z",
        "lang": "eng",
        "text": """We value your privacy
We and our partners store and/or access information on a device, such as cookies and process personal data, such as unique identifiers and standard information sent by a device for personalised advertising and content, advertising and content measurement, audience research and services development.
Accept all
Reject all
Manage options
Partners
Legitimate interest""",
    },
    {
        "key": "wet/forum_sewing",
        "url": "https://www.threadandneedle-forum.com/t/bobbin-thread-looping-underneath/1832",
        "date": "2024-05-22T03:40:25Z",
        "lang": "eng",
        "text": """Thread & Needle Forum
Home Forums Machines Quilting Dressmaking Log in
Bobbin thread looping underneath
Posted by hemline_hannah
My old sewing machine has started making loops of thread on the underside of the fabric. The top looks fine. I have changed the needle and rethreaded the bobbin twice. What else can I try?
Reply from stitchwitch
Loops underneath almost always mean the problem is with the top thread, not the bobbin, odd as that sounds. The top thread is not under enough tension, usually because it has missed the tension discs. Raise the presser foot before you thread the machine, so the discs are open, then rethread the top completely.
Reply from hemline_hannah
I had been threading with the foot down. Rethreaded with it up and the stitches are perfect. Thank you!
Reply from bobbin_bob
Raising the foot is the number one fix on this forum. Should be printed on every machine.
Quick reply
Terms Privacy Contact""",
    },
    {
        "key": "wet/events_listing",
        "url": "https://www.visit-calder-valley.co.uk/whats-on/june/",
        "date": "2024-05-22T03:44:13Z",
        "lang": "eng",
        "text": """Visit Calder Valley
What's on in June
Steam gala weekend, Calder Valley Railway, 1 and 2 June. Visiting locomotives, intensive timetable, real ale bar at Calder Head.
Holmbridge farmers' market, Market Street, every Saturday 9am to 1pm. Local meat, cheese, bread and vegetables.
Guided walk: the mills of the upper valley, 8 June, 10am from Holmbridge station. About 8 miles, moderate. Bring lunch.
Open gardens in Calder Head, 15 and 16 June, 11am to 5pm. Twelve private gardens, teas in the village hall, proceeds to the church roof fund.
Summer concert, Holmbridge Brass Band, Victoria Park bandstand, 23 June, 3pm. Free, bring a chair.
Library talk: a history of the Calder Valley Railway, Holmbridge Library, 28 June, 7pm.
Submit an event
Accommodation Eat and drink Things to do Plan your visit""",
    },
    {
        "key": "wet/amis_du_phare",
        "url": "https://www.amis-du-phare-saint-aubin.fr/association/",
        "date": "2024-05-22T03:48:30Z",
        "lang": "fra",
        "text": """Les Amis du Phare de Saint-Aubin
Accueil L'association Le phare Visites Adhérer Contact
L'association
Fondée en 1998, l'association des Amis du Phare rassemble aujourd'hui plus de trois cents adhérents attachés au phare de la pointe Saint-Aubin et à son histoire.
Lorsque le phare a été automatisé, ses bâtiments sont restés vides pendant plusieurs années et commençaient à se dégrader. Un groupe d'habitants, dont deux anciens gardiens, a alors décidé d'agir pour sauvegarder le site et le faire connaître.
Grâce au travail des bénévoles, la maison des gardiens a été restaurée et accueille désormais une petite exposition permanente. L'association organise des visites de la tour en été, des conférences et une fête du phare chaque année au mois d'août.
Vous pouvez nous soutenir en adhérant à l'association, pour 15 euros par an, ou en devenant bénévole pour l'accueil des visiteurs.
Mentions légales Plan du site""",
    },
]
