'''Forum / Q&A threads for forum.jsonl.zst (authored for the datapipe sample corpus).

A thread is rendered as its title, then each post as "<user> wrote on <date>:" followed by
the post text. Posts may be `("paste", key, preface, ops)` tuples: the post body is then the
text of another document (wiki/news) after `ops` - planted near-duplicates.
Entries with only `text` are short one-post documents (junk replies, "+1" etc.).
'''

BASE = "https://forum.tinkerersbench.net/t/"

THREADS = [
    {
        "key": "forum/nas_backup",
        "slug": "rsync-backup-to-nas-fails-every-night/4412",
        "title": "rsync backup to NAS fails every night with 'connection unexpectedly closed'",
        "posts": [
            ("kestrel_77", "2024-01-08", """My nightly backup from the home server to the NAS has started failing. It worked fine for two years. The cron job runs this:

    rsync -aH --delete --partial /srv/photos/ backup@192.168.1.20:/volume1/photos/

and the log ends with:

    rsync: connection unexpectedly closed (1184 bytes received so far) [sender]
    rsync error: error in rsync protocol data stream (code 12) at io.c(231)

Running it by hand from a terminal works every time. The only thing I changed recently is the NAS firmware, now on 7.2.1.6. Any ideas?"""),
            ("mossbank", "2024-01-08", """Code 12 is usually the remote side dying, not the network. Check the NAS system log at the time the job fails. Some firmware updates reset the SSH settings and kill idle sessions after a timeout, and a big --delete pass can sit silent for a long time while it builds the file list.

Try adding -e "ssh -o ServerAliveInterval=30" so the connection does not look idle."""),
            ("kestrel_77", "2024-01-09", """That was it. The update had turned on a 10 minute idle timeout. With ServerAliveInterval it has run cleanly for two nights.

While I was in the logs I noticed thousands of failed SSH logins from 185.73.216.44 against the router's forwarded port, so I have closed that port too and only allow SSH over the VPN now."""),
            ("mossbank", "2024-01-09", """Good call on the port. Anything exposed on 22 gets hammered within minutes. Glad it is sorted."""),
        ],
    },
    {
        "key": "forum/postgres_docker",
        "slug": "django-cant-connect-to-postgres-after-moving-to-docker/4420",
        "title": "Django can't connect to Postgres after moving to Docker compose",
        "posts": [
            ("ferrous_oxide", "2024-02-02", """I moved our small order tracking app into Docker compose and now Django refuses to start with

    django.db.utils.OperationalError: could not translate host name "db-prod-2.internal.kelpworks.net" to address: Name or service not known

My settings read the URL from the environment, and the .env file has:

    DATABASE_URL=postgres://app_user:Tr0ub4dor-Harbour9@db-prod-2.internal.kelpworks.net:5432/orders

The same URL works from my laptop. What am I missing?"""),
            ("quietgrid", "2024-02-02", """First: you just posted your production password. Rotate it now, and edit the post afterwards. Bots scrape forums for exactly this.

Second: inside the container, your laptop's VPN and its DNS are not there, so the internal host name cannot be resolved. Either run the database as a service in the same compose file and use the service name as the host (for example postgres://app_user:...@db:5432/orders), or give the container access to the DNS server that knows the internal zone."""),
            ("ferrous_oxide", "2024-02-02", """Oh no. Password changed, thank you. The database is on a separate machine, so I added dns: entries to the compose file pointing at our internal resolver and it connects now."""),
        ],
    },
    {
        "key": "forum/aws_keys_pushed",
        "slug": "i-pushed-aws-keys-to-a-public-repo-what-now/4431",
        "title": "I pushed AWS keys to a public GitHub repo. What do I do now?",
        "posts": [
            ("nightjar", "2024-03-11", """I was rushing to share a small script with a friend and pushed it to a public repository with the credentials still at the top:

    AWS_ACCESS_KEY_ID = "AKIAQ4R7XN2LZD5HWMEB"
    AWS_SECRET_ACCESS_KEY = "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"
    BUCKET = "nightjar-field-recordings"

I deleted the file in a new commit ten minutes later. Am I safe?"""),
            ("quietgrid", "2024-03-11", """No. Deleting the file in a new commit leaves it in the history, and automated scanners find keys in public repositories within minutes. Do these in order:

1. Deactivate the key in the IAM console right now, then delete it and create a new one.
2. Check the billing dashboard and CloudTrail for anything you did not start, especially new EC2 instances in regions you never use.
3. Rewrite the repository history or just delete the repository and make a new one.
4. Stop putting keys in code. Use a credentials file or environment variables, and add a pre-commit hook that scans for secrets.

And please edit your post, you have just published the key a second time."""),
            ("nightjar", "2024-03-11", """Key deleted. There were already two large instances running in a region I have never used, started six minutes after my push. Terminated them and opened a support case. Lesson learned the expensive way."""),
            ("mossbank", "2024-03-12", """Support will usually waive the charges for a first incident if you show you have cleaned up. Good luck."""),
        ],
    },
    {
        "key": "forum/sourdough_paste",
        "slug": "starter-not-rising-read-this-first/4440",
        "title": "Starter not rising? Read this first (background from the encyclopedia)",
        "posts": [
            ("paste", "wiki/sourdough", ("crumbshot", "2024-01-21", "People keep asking the same questions about starters, so here is the encyclopedia article on sourdough for background. Worth reading before posting:"), [
                ("replace", "A typical method has four stages.", "A typical method has four steps."),
                ("replace", "Rye flour tends to produce", "Rye flour usually produces"),
            ]),
            ("loafer_jo", "2024-01-21", """Thanks for pinning this. The bit about rye flour is true, my starter only came alive when I switched to rye for a week."""),
        ],
    },
    {
        "key": "forum/maternity_paste",
        "slug": "port-alder-maternity-unit-closing/4447",
        "title": "Maternity unit closing (paywalled article)",
        "posts": [
            ("paste", "news/maternity_unit", ("harbourlights", "2024-01-19", "Paywalled, so here is the text:"), [
                ("drop_line", "By Tom Enys, Health Correspondent"),
                ("replace", "in good conditions", "in good condtions"),
            ]),
        ],
    },
    {
        "key": "forum/job_offer_scam",
        "slug": "remote-job-offer-asked-for-ssn-scam/4452",
        "title": "Remote 'data entry' job offer asked for my SSN before an interview. Scam?",
        "posts": [
            ("tumbleweed_tx", "2024-04-02", """I applied for a remote data entry job I found on a job board. Within an hour I got an email saying I was hired, no interview, and asking me to fill in a 'payroll onboarding form'. I was half asleep and already typed in my SSN, 512-48-7391, and my date of birth before I realized they also wanted my online banking login 'to set up direct deposit'. I did not submit the banking part. Is this a scam and what should I do?"""),
            ("quietgrid", "2024-04-02", """Yes, that is a textbook scam. No real employer hires without talking to you and none needs your banking login. Steps:

- Freeze your credit with all three bureaus (it is free and takes ten minutes online).
- File a report with the FTC at their identity theft site, which gives you a recovery plan.
- Watch your bank accounts and consider an IRS identity protection PIN.

Also, you have now posted your SSN on a public forum, please edit it out."""),
            ("tumbleweed_tx", "2024-04-02", """Ugh, I did, didn't I. Editing now. Credit frozen. Thank you."""),
        ],
    },
    {
        "key": "forum/double_charge",
        "slug": "outdoor-shop-charged-my-card-twice/4458",
        "title": "Outdoor shop charged my card twice for one order",
        "posts": [
            ("pinecone", "2024-02-28", """Ordered a tent from an online outdoor shop last week and my statement shows the same amount, £289.00, taken twice on the same day. Their chat bot just keeps sending me the same FAQ. The card is 4916 3820 5567 4136 if that helps anyone at the shop find it. Has anyone else had this, and how did you get a refund?"""),
            ("moderator_ash", "2024-02-28", """[Moderator] I have masked the card number in the notification emails, but please never post a full card number. Contact the shop through their official channels only."""),
            ("lanternfish", "2024-02-28", """Happened to me with the same shop. One of the charges was a pre-authorisation that dropped off after five working days. If it has not disappeared by then, ask your bank for a chargeback, they are usually quick."""),
            ("pinecone", "2024-03-05", """Second charge vanished this morning, exactly as you said. Thanks."""),
        ],
    },
    {
        "key": "forum/python_csv_encoding",
        "slug": "python-reading-a-csv-with-mixed-encodings/4463",
        "title": "Python: reading a CSV exported from an old accounting program (mixed encodings)",
        "posts": [
            ("ledgerline", "2024-01-30", """I have a CSV exported from an ancient accounting program. Most lines are UTF-8, but some supplier names come out as 'MÃ¼ller' and a few lines crash the reader with

    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 18: invalid continuation byte

How do I read this without losing the names?"""),
            ("bytewise", "2024-01-30", """Sounds like a file stitched together from two sources: some lines in UTF-8 and some in Windows-1252. Decode line by line and fall back when UTF-8 fails:

    import csv, io

    def decode_mixed(raw: bytes) -> str:
        out = []
        for line in raw.splitlines(keepends=True):
            try:
                out.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(line.decode("cp1252"))
        return "".join(out)

    with open("export.csv", "rb") as f:
        text = decode_mixed(f.read())
    rows = list(csv.reader(io.StringIO(text), delimiter=";"))

The 'MÃ¼ller' lines are a different problem: those were UTF-8 bytes decoded as Windows-1252 at some point and saved again. You can often repair them with s.encode("cp1252").decode("utf-8") inside a try block."""),
            ("ledgerline", "2024-01-31", """That did it, including the repair trick for the double-encoded names. 4,312 rows read, no errors."""),
        ],
    },
    {
        "key": "forum/bash_spaces",
        "slug": "bash-loop-over-files-with-spaces-in-names/4470",
        "title": "bash: loop over files with spaces in their names",
        "posts": [
            ("tinfoil", "2024-02-10", """This breaks on a file called 'summer holiday 01.jpg':

    for f in $(ls *.jpg); do convert "$f" -resize 50% "small/$f"; done

It tries to open 'summer', 'holiday' and '01.jpg' separately."""),
            ("bytewise", "2024-02-10", """Never parse ls. The shell expands the glob itself and keeps each name as one word:

    for f in *.jpg; do
        convert "$f" -resize 50% "small/$f"
    done

For recursive work use find with -print0 and read -d '':

    find . -name '*.jpg' -print0 | while IFS= read -r -d '' f; do
        echo "processing $f"
    done"""),
            ("tinfoil", "2024-02-10", """Works. I have been writing $(ls ...) for fifteen years, apparently wrongly."""),
        ],
    },
    {
        "key": "forum/sql_duplicates",
        "slug": "sql-find-and-delete-duplicate-rows-keep-newest/4475",
        "title": "SQL: find and delete duplicate rows, keeping the newest",
        "posts": [
            ("ledgerline", "2024-03-01", """Our customers table has duplicates with the same email but different ids, because the signup form was submitted twice. How do I delete all but the newest row for each email? PostgreSQL 15."""),
            ("quietgrid", "2024-03-01", """Use a window function to number the rows within each email, newest first, and delete everything after the first:

    DELETE FROM customers
    WHERE id IN (
        SELECT id FROM (
            SELECT id,
                   row_number() OVER (PARTITION BY lower(email)
                                      ORDER BY created_at DESC, id DESC) AS rn
            FROM customers
        ) ranked
        WHERE rn > 1
    );

Run the inner SELECT on its own first and check what it would delete. Then add a unique index on lower(email) so it cannot happen again."""),
            ("ledgerline", "2024-03-02", """Perfect, 212 duplicates gone and the index is in place."""),
        ],
    },
    {
        "key": "forum/derailleur_skipping",
        "slug": "rear-derailleur-skipping-under-load/4481",
        "title": "Rear derailleur skipping under load on the middle cogs",
        "posts": [
            ("spokey", "2024-04-14", """Since the weekend my commuter bike skips on the middle three cogs whenever I push hard, for example pulling away from traffic lights. The chain is about 3,000 km old. Indexing looks fine in the stand. Is it the chain, the cassette, or both?"""),
            ("gravel_granny", "2024-04-14", """Measure the chain with a checker or a ruler first. If it has stretched past 0.75 per cent, a new chain on the old cassette will probably skip too on the cogs you use most, and you will need both. If the chain is fine, check the derailleur hanger alignment, a knock in the bike rack is enough to bend it slightly."""),
            ("spokey", "2024-04-16", """Chain was at 0.75. New chain skipped on the worn cogs, as you predicted, so I replaced the cassette as well. Smooth as anything now."""),
        ],
    },
    {
        "key": "forum/garlic_planting",
        "slug": "when-to-plant-garlic-on-heavy-clay/4490",
        "title": "When to plant garlic on heavy clay?",
        "posts": [
            ("plot_22b", "2023-10-02", """I took on an allotment plot this year and the soil is heavy clay that stays wet all winter. Everyone says plant garlic in autumn, but I am worried the cloves will rot. Should I wait until spring?"""),
            ("old_digger", "2023-10-02", """Autumn planting gives bigger bulbs because garlic needs a cold spell to split into cloves. On wet clay, start them in modules in a cold frame in October and plant them out in February when they have roots, or plant on a ridge with a handful of grit under each clove. Don't plant supermarket garlic, buy seed garlic of a hardneck variety."""),
            ("plot_22b", "2023-10-03", """Modules in the cold frame it is. Thanks."""),
        ],
    },
    {
        "key": "forum/pla_warping",
        "slug": "pla-corners-lifting-on-large-prints/4497",
        "title": "PLA corners lifting on large flat prints",
        "posts": [
            ("layerline", "2024-01-17", """Large flat parts in PLA keep lifting at the corners after about an hour. Bed at 60C, nozzle 205C, textured PEI sheet, printer in an unheated garage. Small parts are fine."""),
            ("extruder_ed", "2024-01-17", """An unheated garage in January is your problem. The top of a big part cools and shrinks while the bottom is held warm by the bed, so the corners pull up. Put a cardboard box or a cheap enclosure over the printer, turn the part cooling fan down for the first layers, and wash the sheet with dish soap, fingerprints ruin adhesion. Brims help on sharp corners."""),
            ("layerline", "2024-01-19", """Box over the printer plus a wash fixed it. Amazing what a few degrees does."""),
        ],
    },
    {
        "key": "forum/pi_overheating",
        "slug": "raspberry-pi-4-throttling-at-80c/4502",
        "title": "Raspberry Pi 4 throttling at 80C in a closed case",
        "posts": [
            ("sparkgap", "2024-05-06", """My Pi 4 runs a weather station and a small web dashboard in a closed plastic case on a windowsill. vcgencmd measure_temp shows 80C in the afternoon and get_throttled returns 0x20002. Do I need a fan?"""),
            ("bytewise", "2024-05-06", """0x20002 means it is being throttled now and has been throttled since boot. A closed plastic case in a sunny window is an oven. A passive aluminium case that acts as one big heatsink usually keeps a Pi 4 under 60C at light load without a fan. Also move it out of direct sun."""),
            ("sparkgap", "2024-05-09", """Passive case fitted, now 52C at the hottest part of the day. No more throttling."""),
        ],
    },
    {
        "key": "forum/ipv6_prefix",
        "slug": "isp-gave-me-an-ipv6-prefix-how-do-i-use-it/4508",
        "title": "ISP finally gave me an IPv6 prefix - how do I use it with my own router?",
        "posts": [
            ("packetpusher", "2024-02-19", """My ISP enabled IPv6. The router's status page says WAN IPv4 86.142.77.19, WAN IPv6 2a02:8108:4b40:1e00:d9c1:7a2e:33f0:51c4, and a delegated prefix /56. My own OpenWrt router sits behind the ISP box. How do I get addresses to my LAN?"""),
            ("mossbank", "2024-02-19", """Put the ISP box in bridge mode if it supports it, so your OpenWrt router gets the prefix directly via DHCPv6-PD. Then OpenWrt hands out a /64 from the /56 to each LAN interface and clients autoconfigure. If the box cannot be bridged, ask it to delegate a smaller prefix to your router. And remember that every device now has a globally routable address, so check the firewall rules for IPv6 separately."""),
        ],
    },
    {
        "key": "forum/cast_iron",
        "slug": "rusty-cast-iron-pan-from-a-car-boot-sale/4514",
        "title": "Rusty cast iron pan from a car boot sale - worth saving?",
        "posts": [
            ("skillet_sam", "2023-09-24", """Picked up a heavy cast iron frying pan for two pounds. It is covered in orange rust and some crusty black stuff on the outside. Can it be saved?"""),
            ("old_digger", "2023-09-24", """Almost certainly. Scrub the rust off with steel wool and hot soapy water, or soak it in a fifty-fifty mix of white vinegar and water for an hour, no longer, then scrub. Dry it on the hob straight away, wipe on a very thin layer of oil, wipe most of it off again, and bake upside down at 230C for an hour. Repeat the oil and bake three or four times. The crust on the outside is old seasoning and can stay."""),
            ("skillet_sam", "2023-10-01", """Three rounds of seasoning later it fries eggs better than my non-stick pan did."""),
        ],
    },
    {
        "key": "forum/cv_review",
        "slug": "please-review-my-cv-first-engineering-job/4519",
        "title": "Please review my CV - applying for first engineering job",
        "posts": [
            ("nia_builds", "2024-05-02", """I am finishing an engineering apprenticeship and applying for junior roles. Here is the top of my CV, any comments welcome:

Nia Roskilly
Port Alder, Cornwall | nia.roskilly.eng@gmail.com | 07700 900372

Profile: Apprentice mechatronics technician with three years' experience maintaining packaging machinery. Led a school team that won a national underwater robotics competition. Comfortable with PLC programming, CAD and soldering."""),
            ("gravel_granny", "2024-05-02", """Strong start. Put numbers in: how many machines, what downtime did you reduce. Move the robotics to a projects section with a line on what you personally built.

Also, think about whether you want your phone number and email on a public forum, you could edit them out now that people have read it."""),
            ("nia_builds", "2024-05-03", """Good point on both, thanks. Will rework the profile with numbers."""),
        ],
    },
    {
        "key": "forum/git_undo_1",
        "slug": "git-how-do-i-undo-my-last-commit/4525",
        "title": "git: how do I undo my last commit?",
        "posts": [
            ("tinfoil", "2024-03-18", """I committed to main by mistake instead of my feature branch. I have not pushed yet. How do I undo the last commit but keep the changes so I can commit them on the right branch?"""),
            ("bytewise", "2024-03-18", """Since you have not pushed, move main back one commit and keep the changes in your working tree:

    git reset --soft HEAD~1
    git switch -c my-feature
    git commit -m "the same message"

--soft keeps the changes staged. Use --mixed if you want them unstaged, and never --hard unless you want them gone."""),
            ("tinfoil", "2024-03-18", """Worked perfectly, thanks."""),
        ],
    },
    {
        "key": "forum/git_undo_2",
        "slug": "git-how-do-i-undo-my-last-commit-already-pushed/4611",
        "title": "git: how do I undo my last commit?",
        "posts": [
            ("tinfoil", "2024-05-27", """I committed to main by mistake instead of my feature branch. This time I have already pushed. How do I undo the last commit but keep the changes so I can commit them on the right branch?"""),
            ("bytewise", "2024-05-27", """Same answer as your thread in March if it had not been pushed yet: move main back one commit and keep the changes in your working tree:

    git reset --soft HEAD~1
    git switch -c my-feature
    git commit -m "the same message"

--soft keeps the changes staged. Use --mixed if you want them unstaged, and never --hard unless you want them gone."""),
            ("quietgrid", "2024-05-27", """Once it is pushed and others may have pulled it, do not rewrite main. Revert it instead, which adds a new commit that undoes the change:

    git switch -c my-feature
    git switch main
    git revert HEAD
    git push

Your feature branch still has the commit, so carry on there."""),
            ("tinfoil", "2024-05-27", """Reverted and pushed. Thank you again."""),
        ],
    },
    {
        "key": "forum/de_heizung",
        "slug": "heizung-gluckert-nach-dem-entlueften/4531",
        "title": "Heizung gluckert auch nach dem Entlüften",
        "posts": [
            ("altbau_andi", "2023-11-12", """Hallo zusammen, die Heizkörper im Obergeschoss gluckern seit zwei Wochen, obwohl ich sie schon zweimal entlüftet habe. Der Druck an der Therme lag danach bei 1,1 bar. Gasbrennwerttherme, Baujahr 2012, Einfamilienhaus mit zwei Etagen. Woran kann das liegen?"""),
            ("heizungsbauer_k", "2023-11-12", """1,1 bar ist für zwei Etagen zu wenig. Wenn der Anlagendruck nach dem Entlüften fällt, musst du Wasser nachfüllen, sonst zieht die Anlage oben wieder Luft. Ziel sind bei kalter Anlage etwa 1,5 bis 1,8 bar. Wenn der Druck danach immer wieder sinkt, solltest du das Ausdehnungsgefäß prüfen lassen, das ist nach zehn Jahren oft nicht mehr in Ordnung."""),
            ("altbau_andi", "2023-11-14", """Auf 1,6 bar aufgefüllt, seitdem ist Ruhe. Danke!"""),
        ],
    },
    {
        "key": "forum/fr_tomates",
        "slug": "mes-tomates-pourrissent-par-le-dessous/4536",
        "title": "Mes tomates pourrissent par le dessous",
        "posts": [
            ("potager_lea", "2023-07-22", """Bonjour, sur mes plants de tomates, beaucoup de fruits ont une tache noire et molle sous le fruit, à l'opposé de la tige. Les feuilles sont belles. Je les cultive en pots sur mon balcon. Est-ce une maladie ?"""),
            ("jardinier_paul", "2023-07-22", """Ce n'est pas une maladie, c'est la nécrose apicale, liée à un manque de calcium dans le fruit. En général il y a assez de calcium dans le terreau, mais un arrosage irrégulier l'empêche d'arriver jusqu'aux fruits. En pot, en plein été, il faut arroser tous les jours, régulièrement, et pailler la surface. Enlevez les fruits abîmés, les suivants seront normaux."""),
            ("potager_lea", "2023-07-30", """Merci beaucoup ! J'arrose maintenant chaque soir et les nouvelles tomates sont parfaites."""),
        ],
    },
    {
        "key": "forum/es_guitarra",
        "slug": "cuerdas-de-guitarra-que-se-desafinan/4540",
        "title": "Cuerdas nuevas que se desafinan constantemente",
        "posts": [
            ("rasgueo", "2024-02-03", """Hola. Acabo de cambiar las cuerdas de mi guitarra clásica y no hay manera de que se mantengan afinadas. Afino, toco dos canciones y ya están otra vez bajas. ¿Es normal o he hecho algo mal al ponerlas?"""),
            ("luthier_mario", "2024-02-03", """Es completamente normal. Las cuerdas de nailon se estiran mucho durante los primeros días. Puedes acelerar el proceso estirándolas suavemente con la mano a lo largo del mástil y volviendo a afinar varias veces. Comprueba también que tengan dos o tres vueltas en el clavijero y que el nudo del puente esté bien apretado. En tres o cuatro días estarán estables."""),
            ("rasgueo", "2024-02-06", """Tenías razón, hoy ya aguantan la afinación toda la tarde. ¡Gracias!"""),
        ],
    },
    {
        "key": "forum/pl_rower",
        "slug": "skrzypienie-przy-pedalowaniu/4544",
        "title": "Skrzypienie przy pedałowaniu pod górę",
        "posts": [
            ("kolarz_marek", "2024-04-21", """Cześć, od tygodnia mój rower skrzypi przy każdym mocniejszym naciśnięciu na pedał, szczególnie pod górę. Na stojaku nic nie słychać. Rower ma cztery lata i około ośmiu tysięcy kilometrów przebiegu. Od czego zacząć?"""),
            ("serwis_ania", "2024-04-21", """Najczęściej winne są pedały albo suport. Zacznij od najprostszego: wykręć pedały, wyczyść i nasmaruj gwinty, to samo zrób ze śrubami korby. Jeśli to nie pomoże, sprawdź luzy na suporcie. Czasem skrzypi też sztyca podsiodłowa albo szprychy, więc warto jeździć chwilę na stojąco i posłuchać, czy dźwięk znika."""),
            ("kolarz_marek", "2024-04-23", """To były pedały. Po wyczyszczeniu i nasmarowaniu gwintów jest cisza. Dzięki!"""),
        ],
    },
    {
        "key": "forum/antenna_2m",
        "slug": "simple-antenna-for-2m-from-a-small-flat/4549",
        "title": "Simple antenna for 2 m from a small flat?",
        "posts": [
            ("dx_dreamer", "2024-01-12", """Newly licensed and living in a third floor flat with no access to the roof. I have a handheld for 2 m and 70 cm. The rubber duck antenna barely reaches the local repeater 15 km away. What can I do indoors?"""),
            ("sparkgap", "2024-01-12", """Build a quarter-wave ground plane from a panel-mount connector and five pieces of stiff wire, it costs almost nothing and hangs in a window. Better still, a small three-element Yagi pointed at the repeater. Height and a clear window facing the right way matter more than anything else. Also try a longer whip on the handheld, that alone can make a big difference."""),
            ("dx_dreamer", "2024-01-20", """Built the ground plane from coat hanger wire, hit the repeater full quieting from the bedroom window. Thanks!"""),
        ],
    },
    {
        "key": "forum/first_mortise",
        "slug": "first-mortise-and-tenon-gappy-shoulders/4553",
        "title": "First hand-cut mortise and tenon - gappy shoulders",
        "posts": [
            ("shavings", "2024-03-03", """Cut my first mortise and tenon joints for a small side table in oak. The tenons fit snugly, but there are visible gaps at the shoulders on one side of each joint. What am I doing wrong?"""),
            ("old_digger", "2024-03-03", """Gaps on one side usually mean the shoulder cuts are not square to the face, or the tenon cheeks are slightly angled so the tenon twists in the mortise. Knife the shoulder lines all the way round, chisel a small V-groove on the waste side and start the saw in it. Then pare the shoulders with a wide chisel and check with a square. Slight undercutting of the shoulder, so only the outer edge touches, also helps it close up tight."""),
        ],
    },
    {
        "key": "forum/varroa_timing",
        "slug": "when-to-treat-for-varroa/4560",
        "title": "When to treat for varroa in a first-year colony?",
        "posts": [
            ("buzzing_bea", "2023-08-09", """My first colony is doing well and I took off a small honey crop last week. My mentor says I should treat for varroa now, but the colony looks healthy and I have only seen a couple of mites. Is it really necessary?"""),
            ("old_digger", "2023-08-09", """If you can see mites on adult bees, there are many more in the capped brood. Late summer is when the colony raises the winter bees that must live for months, and those bees need to be raised free of mites and the viruses they spread. Do a sugar roll or an alcohol wash to count mites per hundred bees, but in most places treating after the honey comes off is the right call. Your mentor is right."""),
        ],
    },
    {
        "key": "forum/keyboard_chatter",
        "slug": "mechanical-keyboard-key-chattering-double-letters/4566",
        "title": "Mechanical keyboard typing double letters",
        "posts": [
            ("clacky", "2024-04-28", """My two year old mechanical keyboard has started typing double letters on the E and the space bar. Typing 'the' gives 'thee' about one time in ten. Is the switch dying?"""),
            ("bytewise", "2024-04-28", """That is switch chatter. Try blowing compressed air into the switch first, dust is the usual cause. If the board has hot-swap sockets, swap the E switch with one you rarely use and see whether the problem moves. Some firmware lets you increase the debounce time, which hides mild chatter."""),
            ("clacky", "2024-04-29", """Compressed air fixed the space bar, the E switch I swapped with the scroll lock one. Problem moved with it, so new switch ordered."""),
        ],
    },
    {
        "key": "forum/jwt_debug",
        "slug": "jwt-rejected-with-signature-verification-failed/4572",
        "title": "JWT rejected with 'signature verification failed' in staging only",
        "posts": [
            ("ferrous_oxide", "2024-05-20", """Our API rejects tokens in staging but accepts them locally. Here is one of the failing tokens from the logs:

    Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0ODIxIiwibmFtZSI6IlByaXlhIE5haXIiLCJyb2xlIjoiZWRpdG9yIiwiaWF0IjoxNzE2MjAwMDAwfQ.Xq3v8ZKp0Lw1tYbN7cR2mFh5sJd9eGa4uTiO6yWkQzE

Same code, same library version. What could differ?"""),
            ("quietgrid", "2024-05-20", """The signing secret. Staging almost certainly has a different JWT_SECRET in its environment than the service that issued that token. Check both services read the same variable. And do not paste live tokens into forums, anyone can decode the payload and, until it expires, use it."""),
            ("ferrous_oxide", "2024-05-20", """The issuer was reading the secret from an old config file, not the environment. Fixed, and that token is revoked."""),
        ],
    },
    {
        "key": "forum/solar_balcony",
        "slug": "balcony-solar-panel-worth-it/4578",
        "title": "Is a balcony solar panel worth it in a north-facing flat?",
        "posts": [
            ("sunny_side_up", "2024-04-09", """Thinking about one of those plug-in balcony solar kits, 800 W with a microinverter. Problem: my balcony faces north-west. Would it ever pay for itself?"""),
            ("sparkgap", "2024-04-09", """North-west will get direct sun only in the late afternoon and evening in summer, so expect perhaps a third to half of what a south-facing panel would produce. Run the numbers with a free solar calculator for your location and tilt. If the kit costs 500 and you save 60 a year, that is eight years before it pays back, ignoring any subsidy. Mounting the panels vertically on the railing loses a bit more."""),
            ("sunny_side_up", "2024-04-10", """Calculator says about 310 kWh a year. Marginal, but I might still do it for the fun of watching the meter."""),
        ],
    },
    {
        "key": "forum/slug_defence",
        "slug": "slugs-ate-every-seedling-again/4583",
        "title": "Slugs ate every seedling again",
        "posts": [
            ("plot_22b", "2024-05-15", """Planted out forty lettuce and thirty beans last weekend. This morning there are stalks. What actually works against slugs without poisoning everything else on the plot?"""),
            ("old_digger", "2024-05-15", """Grow seedlings on until they are bigger before planting out, young plants are what slugs love most. Go out with a torch after dark and pick them off, the first few nights make a real difference. Beer traps sunk into the soil catch a lot. Encourage frogs and hedgehogs with a small pond and a log pile. And water in the morning, not the evening, so the surface is dry at night."""),
        ],
    },
]

# Short one-post documents: junk a quality filter should drop.
SHORT_POSTS = [
    ("forum/junk_plus1", "rsync-backup-to-nas-fails-every-night/4412?reply=9", "+1"),
    ("forum/junk_thanks", "starter-not-rising-read-this-first/4440?reply=7", "thanks!!!"),
    ("forum/junk_bump", "balcony-solar-panel-worth-it/4578?reply=5", "bump"),
    ("forum/junk_same", "mechanical-keyboard-key-chattering-double-letters/4566?reply=6", "Same problem here, any update?"),
    ("forum/junk_following", "isp-gave-me-an-ipv6-prefix-how-do-i-use-it/4508?reply=4", "following"),
    ("forum/junk_this", "git-how-do-i-undo-my-last-commit/4525?reply=5", "^^^ this"),
    ("forum/junk_lol", "slugs-ate-every-seedling-again/4583?reply=3", "lol same. slugs 1, me 0"),
    ("forum/junk_worked", "bash-loop-over-files-with-spaces-in-names/4470?reply=6", "Thanks, that worked!!"),
    ("forum/junk_pm", "please-review-my-cv-first-engineering-job/4519?reply=4", "Check your PMs"),
    ("forum/junk_emoji", "pla-corners-lifting-on-large-prints/4497?reply=5", ":) :) :) nice!!!"),
]
