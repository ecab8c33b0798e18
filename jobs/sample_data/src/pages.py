'''Loose HTML files for pages/ (authored for the datapipe sample corpus). Same fields as web_a,
plus `file` (the file name under pages/; a `.html.gz` name is gzip-compressed).'''

PAGES = [
    {
        "key": "pages/leek_soup",
        "file": "leek-and-potato-soup.html",
        "url": "https://www.hearthandhome-recipes.com/soups/leek-and-potato-soup/",
        "site": "hearth",
        "date": "2024-01-15",
        "title": "Leek and potato soup",
        "derive_from": "web/thrifty_leek_soup",
        "ops": [
            ("swap_para", 0, 1),
        ],
    },
    {
        "key": "pages/dry_stone_walls",
        "file": "dry-stone-walls.html",
        "url": "https://www.uplandwallers.org.uk/about-walling/",
        "site": "wallers",
        "date": "2023-09-01",
        "title": "About dry stone walling",
        "derive_from": "wiki/dry_stone_wall",
        "ops": [
            ("replace", "can stand for more than a century with little maintenance", "can stand for well over a century with very little maintenance"),
            ("append_para", "If you would like to learn the craft, our beginners' weekends are held every month from April to October. No experience is needed, just stout boots and gloves."),
        ],
    },
    {
        "key": "pages/nordsee_faehre",
        "file": "nordsee-portal-neue-faehre.html",
        "url": "https://www.nordsee-portal.de/nachrichten/neue-faehre-insellinie/",
        "site": "nordseeportal",
        "date": "2024-05-09",
        "title": "Neue Fähre für die Insellinie",
        "derive_from": "web/kuestenbote_faehre",
        "ops": [
            ("replace", "was Lärm und Abgase deutlich verringert", "was Lärm und Abgase spürbar verringert"),
            ("append_para", "Quelle: Der Küstenbote"),
        ],
    },
    {
        "key": "pages/salt_road_excerpt",
        "file": "the-salt-road-excerpt.html",
        "url": "https://www.thereadinglamp.net/excerpts/the-salt-road/",
        "site": "litblog",
        "date": "2024-02-02",
        "title": "Excerpt: The Salt Road, by Hester Vane",
        "derive_from": "book/salt_road",
        "ops": [
            ("keep_paras", 3, 13),
            ("prepend_para", "Hester Vane's small collection of coastal stories has been out of print for decades. Here is the opening of the title story."),
            ("append_para", "The full text is available from the Open Shelf Library."),
        ],
    },
    {
        "key": "pages/casa_ramon_cp1252",
        "file": "casa-ramon-menu.html",
        "url": "http://www.casaramon-valdecea.es/menu.htm",
        "site": "restaurante",
        "date": "2012-05-02",
        "title": "Casa Ramón \u2013 Menú del día",
        "encoding": "cp1252",
        "declare_charset": False,
        "body": """## Menú del día \u2013 12,50 \u20ac

De lunes a viernes, de 13:30 a 16:00. Incluye pan, bebida (agua, vino de la casa o gaseosa) y postre o café.

## Primeros platos

- Lentejas estofadas con chorizo
- Ensalada mixta de la huerta
- Sopa castellana
- Pimientos rellenos de bacalao

## Segundos platos

- Merluza a la romana con patatas
- Pollo asado al ajillo
- Chuletas de cordero con pimientos
- Tortilla de patatas con ensalada

## Postres

- Flan de la casa
- Arroz con leche
- Fruta del tiempo

Los sábados servimos cocido completo por encargo. Para reservas llamen al 976 54 12 08. \u00a1Les esperamos!""",
    },
    {
        "key": "pages/qa_merge_dicts",
        "file": "python-merge-two-dicts.html",
        "url": "https://devanswers.example-qa.net/questions/88213/merge-two-dicts-keep-values-from-second",
        "site": "qa",
        "date": "2023-03-11",
        "title": "How do I merge two dicts so that values from the second one win?",
        "posts": [
            ("rustybucket", "2023-03-11", """I have default settings and user settings as two dictionaries:

    defaults = {"theme": "light", "font_size": 12, "autosave": True}
    user = {"font_size": 14}

I want a new dict with everything from defaults, overridden by whatever is in user, without modifying either one. What is the idiomatic way in Python 3.11?"""),
            ("answer: k_kowalczyk (312 votes)", "2023-03-11", """In Python 3.9 and later, use the merge operator:

    merged = defaults | user

Keys from the right-hand operand win. Neither input is modified. In older versions, unpack both into a new dict:

    merged = {**defaults, **user}

Both create a shallow copy, so nested dicts are shared between the result and the inputs. If your settings are nested and you want a deep merge, you need a small recursive function:

    def deep_merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for key, value in b.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = deep_merge(out[key], value)
            else:
                out[key] = value
        return out"""),
            ("answer: lemma_tree (41 votes)", "2023-03-12", """If you want to update in place rather than create a new dict, use defaults |= user or defaults.update(user). And for layered configuration that you look up often, collections.ChainMap(user, defaults) avoids copying at all: lookups search user first, then defaults."""),
        ],
    },
    {
        "key": "pages/headphones_comparison",
        "file": "best-budget-headphones-2024.html",
        "url": "https://www.soundcheck-reviews.co.uk/headphones/best-budget-noise-cancelling/",
        "site": "techreview",
        "date": "2024-04-17",
        "title": "The best budget noise-cancelling headphones in 2024",
        "body": """Active noise cancellation used to be a premium feature. Now there are good over-ear headphones with ANC for under £100, and a couple of them are genuinely impressive. We spent three weeks with six pairs on commutes, flights and in a noisy open-plan office to find the ones worth your money.

## Quick comparison

| Model | Price | Battery (ANC on) | Weight | Our score |
| Arden Quiet 2 | £79 | 38 h | 254 g | 8/10 |
| Sonora Flow ANC | £99 | 30 h | 268 g | 8/10 |
| Kestrel Q40 | £59 | 45 h | 281 g | 7/10 |
| Veld Studio Lite | £89 | 25 h | 240 g | 6/10 |
| Brightline Hush | £49 | 22 h | 290 g | 5/10 |

## Best overall: Arden Quiet 2

The Arden Quiet 2 block low engine rumble almost as well as headphones costing three times as much, and they are light and comfortable enough to wear for a whole flight. The sound is warm with a slightly boosted bass, which suits most music, and the app lets you tame it with an equaliser. The microphones are mediocre for calls in windy weather.

## Best battery life: Kestrel Q40

If you hate charging things, the Kestrel Q40 lasted just over 45 hours in our test with noise cancellation on. The cancellation is weaker on voices than the Arden, and the clamping force is high, so people with larger heads may find them tiring after a couple of hours.

## How we test

We measure battery life by playing the same playlist at a fixed volume until the headphones switch off, and we compare noise cancellation by recording the same train and office noise through a measurement head. Every pair is worn for at least twenty hours by two testers.""",
    },
    {
        "key": "pages/moving_blog",
        "file": "our-first-month-in-varnholm.html",
        "url": "https://www.fjordandforth.blog/2024/04/our-first-month-in-varnholm/",
        "site": "movingblog",
        "date": "2024-04-30",
        "title": "Our first month in Varnholm",
        "body": """It has been a month since we drove off the ferry with two children, a dog, a car full of boxes and no real idea of what we were doing. Here, for the grandparents and for anyone else thinking of a move like this, is how it has gone.

The rain. Everyone warned us, and everyone was right. It has rained on twenty-three of our thirty days here, not dramatic storms but a patient, soft, persistent rain that seems to come from every direction at once. The locals do not seem to notice it. Our children, after a week of complaining, no longer notice it either. I am working on it.

School has been easier than we feared. Both children have a teacher who speaks good English and classmates who are endlessly curious about Scotland. Our eldest has already learned more Norwegian than either of us, mostly words we hope she will not use at home. The school day ends early, and in the afternoons everyone seems to be outside, whatever the weather, in waterproof overalls that we were told to buy in our first week.

Food is expensive, but the fish is the best we have ever eaten. There is a stall on the harbour that sells whatever came in that morning, and the man who runs it has taken it upon himself to teach us how to cook each thing he sells us.

A practical note, since several friends have asked: our new address and phone details are below, and we would love letters, especially for the children.

Fiona and Callum Reid, Strandgata 14, Varnholm. Phone +47 912 34 567, email fiona.callum.reid@outlook.com.""",
        "comments": [("Granny Reid", "2024-05-01", "Lovely to read this. Parcel on its way with tablet and shortbread.")],
    },
    {
        "key": "pages/app_shell",
        "file": "tidepool-app.html",
        "url": "https://app.tidepool-tides.io/",
        "site": "appshell",
        "date": "2024-05-01",
        "title": "Tidepool",
        "body": "You need to enable JavaScript to run this app.",
    },
    {
        "key": "pages/musee_phares",
        "file": "musee-exposition-phares.html",
        "url": "https://www.musee-mer-saint-aubin.fr/expositions/gardiens-de-phare/",
        "site": "musee",
        "date": "2024-03-20",
        "title": "Gardiens de phare : une vie au bout du monde",
        "body": """Du 6 avril au 3 novembre 2024, le Musée de la Mer consacre une grande exposition à la vie des gardiens de phare, ces hommes et parfois ces femmes qui ont veillé pendant deux siècles sur les côtes de la région.

Isolés en pleine mer pendant des semaines, les gardiens des phares dits « en mer » vivaient au rythme des relèves, des tempêtes et de l'entretien minutieux de la lanterne. Ceux des phares à terre menaient une vie plus familiale, mais tout aussi réglée : allumage au coucher du soleil, surveillance de la flamme toute la nuit, nettoyage des lentilles chaque matin.

## Au programme

L'exposition réunit plus de deux cents objets, dont une lentille de Fresnel de troisième ordre restaurée pour l'occasion, des carnets de service, des uniformes et des photographies inédites prêtées par des familles de gardiens. Des témoignages enregistrés permettent d'entendre les derniers gardiens raconter leur métier, avant l'automatisation complète des phares à la fin du vingtième siècle.

Un espace est réservé aux enfants, avec une maquette de phare à explorer et un atelier sur le code des feux : chaque phare possède sa propre signature lumineuse, qui permet aux marins de le reconnaître dans la nuit.

## Informations pratiques

Ouvert tous les jours sauf le mardi, de 10 h à 18 h. Plein tarif 8 €, tarif réduit 5 €, gratuit pour les moins de 12 ans. Visites guidées le samedi à 15 h.""",
    },
    {
        "key": "pages/honest_hammer",
        "file": "the-honest-hammer.html.gz",
        "url": "https://www.workbenchletters.com/essays/the-honest-hammer/",
        "site": "essays",
        "date": "2024-03-07",
        "title": "The honest hammer",
        "body": """My grandfather's claw hammer hangs on a nail above my bench, and I use it most days. The head is forged steel, dark with age and slightly mushroomed on the striking face. The handle is the third or fourth it has had: ash, shaped by a previous owner with a spokeshave to fit a hand a little larger than mine. It is not a remarkable tool. It was not expensive when it was new. But it does exactly what it appears to do, and I have come to think that this is the rarest and most valuable quality a tool can have.

A hammer is honest in a way that few modern objects are. You can see how it works. The weight is in the head, the handle is a lever, and the force you put in comes out at the face, multiplied by the length of your arm and the speed of your swing. When it fails, it fails visibly: the handle cracks, the head works loose, the face chips. Nothing about it is hidden inside a sealed case, and nothing about it will stop working because a company on the other side of the world has decided to stop supporting it.

## What the tool teaches

Apprentices used to be told that you could judge a carpenter by the state of his tools. The saying is usually taken as a moral lesson about care and discipline, and it is that. But it is also a description of a relationship. A tool that is used every day for years is shaped by its user as much as the user's habits are shaped by the tool. My grandfather's hammer has a worn patch on the handle where his thumb rested, and now mine rests there too.

Learning to use such a tool well takes time, and the learning is mostly in the body. You learn to let the weight of the head do the work, to keep your wrist loose, to watch the nail and not the hammer. You learn the sound of a nail going home cleanly and the different, duller sound of one that has bent. None of this can be written down in a way that replaces practice. It is knowledge that lives in the hands.

## Repair

The honesty of a simple tool also makes it repairable. When the handle of my hammer split, I made a new one from a piece of ash in an afternoon, using tools that would have been familiar two centuries ago. I could do this because the design has no secrets. The head is held on by a wedge driven into the end of the handle, and anyone who looks at it can see how.

Much of what we own now cannot be repaired this way, not because repair is impossible in principle but because the object has been designed to make it difficult. Glued cases, proprietary screws, parts that are paired in software so that a replacement will not work: each of these turns an object that could be honest into one that hides how it works from the person who owns it.

## A modest proposal

I am not arguing that we should all go back to hand tools, or that everything complicated is bad. My workshop has a table saw and a dust extractor, and I am grateful for both. But I think there is a useful question to ask of any tool we buy, which is the question the hammer answers so plainly: can I understand how this works, and could I fix it if it broke?

The more often the answer is yes, the more the things we own will last, and the more of our own knowledge we will keep in our hands rather than handing it over to someone else.""",
    },
    {
        "key": "pages/quillstack_api",
        "file": "quillstack-plugin-api.html",
        "url": "https://quillstack.dev/docs/3.0/plugins/api/",
        "site": "quillstack",
        "date": "2023-06-01",
        "title": "Plugin API - Quillstack 3.0",
        "body": '''Plugins extend Quillstack by hooking into the build. A plugin is a Python class that subclasses quillstack.Plugin and implements one or more hook methods. Quillstack calls the hooks in a fixed order for every build.

## A minimal plugin

```
from quillstack import Plugin, Page


class WordCount(Plugin):
    """Adds a reading-time estimate to every page."""

    name = "wordcount"

    def on_page_rendered(self, page: Page) -> Page:
        words = len(page.text.split())
        page.meta["reading_minutes"] = max(1, round(words / 220))
        return page
```

Register the plugin through an entry point in your package metadata, then enable it in quill.toml:

```
[plugins]
enabled = ["wordcount"]
```

## Hooks

- on_config(config) is called once after the configuration has been loaded and validated. Return the config, modified if needed.
- on_page_read(page) is called after a page's source has been read and before it is parsed.
- on_page_rendered(page) is called after a page has been rendered to HTML.
- on_build_finished(site) is called once, after every page has been written. Use it to write extra files such as sitemaps.

Hooks must not keep state between builds, because incremental builds may call them for only some of the pages. Store anything you need in page.meta or in the site object.

## Errors

Raise quillstack.PluginError with a message that tells the user what to change. Quillstack reports the plugin name, the page being processed and your message, and stops the build unless the user runs with --keep-going.''',
    },
]
