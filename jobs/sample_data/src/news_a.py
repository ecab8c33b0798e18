"""News articles for news-0.jsonl.gz (authored for the datapipe sample corpus).

Each article: key, outlet (see OUTLETS), date, headline, body. The JSONL `text` is
headline + blank line + body. Bodies may carry bylines and contact lines (planted PII).
"""

OUTLETS = {
    "gazette": ("The Harbour Gazette", "https://www.harbourgazette.co.uk/news/"),
    "courier": ("Midland Courier", "https://www.midlandcourier.co.uk/local/"),
    "cpa": ("Continental Press Agency", "https://www.cpa-newswire.com/story/"),
    "kuestenbote": ("Der Küstenbote", "https://www.kuestenbote.de/lokales/"),
    "diario": ("Diario del Valle", "https://www.diariodelvalle.es/noticias/"),
    "saintaubin": ("La Gazette de Saint-Aubin", "https://www.gazette-saint-aubin.fr/actualite/"),
}

ARTICLES = [
    {
        "key": "news/harbour_dredging",
        "outlet": "gazette",
        "date": "2024-02-13",
        "headline": "Council approves £4.2m contract to dredge Port Alder harbour",
        "body": """By Martha Quayle, Local Democracy Reporter

Port Alder's harbour will be dredged for the first time in eleven years after councillors approved a £4.2 million contract on Monday evening, ending months of argument over who should pay for the work.

Silt carried down by winter storms has reduced the depth of the inner harbour so much that the larger boats in the fishing fleet can now enter and leave only for about three hours either side of high water. Skippers told the council's harbour committee last autumn that they had lost whole days of fishing because they could not get back in before the tide dropped.

The contract has been awarded to a marine engineering firm from the north coast, which will bring a cutter suction dredger into the harbour in April. About 90,000 cubic metres of sediment will be removed over ten weeks. Material that passes contamination tests will be used to rebuild the eroded dunes at North Sands, while the rest will be taken to a licensed disposal site at sea.

Councillor Ruth Penhale, who chairs the harbour committee, said the decision was overdue. "Everybody in this town understands that the harbour is the reason we are here at all," she said. "If the boats can't get in and out, the fish market goes, the ice plant goes, the chandlers go. This is money spent on keeping the town working."

The cost will be shared between the council, the harbour trust and a national coastal fund, which agreed in January to cover just over half. Harbour dues for visiting yachts will rise by eight per cent from next season.

Not everyone was convinced. Two councillors voted against the contract, arguing that dredging every decade treats the symptom rather than the cause, and that the council should instead investigate a longer breakwater to stop silt entering the harbour mouth. An engineering study of that option is expected in the summer.

Work is expected to begin on 8 April and be completed before the Feast of St. Odran at the end of August. Boat owners will be told which berths are affected a week in advance.""",
    },
    {
        "key": "news/ferry_strike",
        "outlet": "cpa",
        "date": "2024-03-02",
        "headline": "Ferry crews vote to strike over rosters on northern routes",
        "body": """Crews on six ferry routes serving the northern islands have voted to strike in a dispute over rosters and rest periods, their union said on Saturday, raising the prospect of disruption at the start of the tourist season.

Of the members who took part in the ballot, 81 per cent supported strike action and 92 per cent supported action short of a strike, such as refusing overtime. Turnout was 68 per cent. The union said the first stoppage could take place in late March unless the operator returned to talks with what it called a serious offer.

The dispute centres on a new rostering system introduced last year, under which deckhands and catering staff can be scheduled for longer blocks of consecutive days at sea. The union says this has led to fatigue and makes it impossible for many crew members to arrange childcare. The company says the change was needed to cover vacancies and that the rosters comply with all legal limits on working hours.

"Nobody wants to see islanders cut off or visitors stranded," a union organiser said. "But our members have been telling management for a year that the rosters are unsafe, and they have been ignored."

A spokesperson for the operator said it was disappointed by the result and remained committed to finding a solution. The company said it would publish a contingency timetable prioritising lifeline sailings carrying food, fuel and medical supplies if a strike went ahead.

Island councils expressed alarm at the prospect of cancelled sailings. Hauliers and hotel owners said the timing, just before the Easter holidays, could hardly be worse. One island's business association estimated that a week without normal services would cost local firms several hundred thousand in lost trade.

Talks between the two sides are due to resume on Tuesday.""",
    },
    {
        "key": "news/maternity_unit",
        "outlet": "gazette",
        "date": "2024-01-19",
        "headline": "Port Alder maternity unit to close to births from April, health board confirms",
        "body": """By Tom Enys, Health Correspondent

Babies will no longer be delivered at Port Alder Community Hospital from April, the regional health board confirmed on Thursday, despite a campaign by parents and midwives that gathered more than 14,000 signatures.

The board said the midwife-led unit, which handled 212 births last year, could not be staffed safely after three experienced midwives retired and attempts to recruit replacements failed. Expectant mothers will instead be offered births at the county hospital in Halden Bay, about fifty minutes away by road in good conditions, or at home with the support of community midwives.

Antenatal and postnatal clinics will continue at Port Alder, and the board said it would review the decision in twelve months.

Campaigners reacted with anger. Jess Tregarthen, who gave birth to her second child at the unit in December, said the journey to Halden Bay was a real worry for families in the outlying villages. "When the coast road is closed by a landslip, as it was twice last winter, that fifty minutes becomes two hours," she said. "Labour doesn't wait for the road to reopen."

The board's director of midwifery said ambulance crews would be given additional training and that a dedicated transfer vehicle would be based at Port Alder. She acknowledged that the decision would be disappointing to many families. "We have looked at every option," she said. "We cannot run a unit where a woman in labour might arrive and find nobody qualified to care for her."

The town's member of parliament said she would raise the closure with ministers and called for a clear timetable for reopening.

The campaign group said it would continue to press for the unit to be restored and is planning a public meeting at the Seamen's Institute on 3 February.""",
    },
    {
        "key": "news/library_reopens",
        "outlet": "courier",
        "date": "2024-04-06",
        "headline": "Holmbridge library reopens after eighteen-month refurbishment",
        "body": """Holmbridge's Victorian library reopened its doors on Saturday after an eighteen-month refurbishment that has restored its reading room, added a lift and turned the former caretaker's flat into a study space for students.

Hundreds of people queued along Market Street before the mayor cut the ribbon at ten o'clock. Among the first through the door were members of a knitting group that had met in the library every Thursday for twenty years and spent the closure in the back room of a café.

The £2.7 million project was funded mainly by a heritage grant, with contributions from the district council and a local trust. Builders uncovered the original painted ceiling of the reading room, which had been hidden behind suspended tiles since the 1970s, and conservators spent four months cleaning and repairing it.

The new children's library occupies the ground floor of the former caretaker's flat, and the upper floor now holds twelve bookable study desks with power sockets. The library has also gained a small local history room, where residents can consult maps, directories and back issues of the Courier.

Library manager Priya Lund said the building felt alive again. "People have been coming in all morning telling us where they used to sit as children," she said. "We want the next generation to have the same memories, and a lift means everyone can now get to the reading room."

Opening hours have been extended to include Monday evenings until eight, and the library will host a programme of free talks during its first month. The first, on the history of the Calder Valley Railway, takes place next Friday.

The temporary library in the shopping centre closed on Wednesday. Books borrowed from there can be returned at the main building.""",
    },
    {
        "key": "news/flood_defences",
        "outlet": "gazette",
        "date": "2023-11-08",
        "headline": "Plans unveiled for £11m flood wall along Port Alder seafront",
        "body": """By Martha Quayle

A new flood wall running the length of Port Alder's seafront and a set of demountable barriers for the old town have been proposed by the Environment Office, which says the scheme would protect more than 600 homes and businesses from coastal flooding.

The proposals, put on public display at the town hall on Tuesday, follow the floods of January 2014, when a storm surge combined with a high spring tide overtopped the existing sea wall and flooded streets in the old town to a depth of almost a metre. A smaller flood in 2021 damaged several shops on Quay Street.

Under the plans the existing promenade wall would be raised by between 60 and 90 centimetres, and the promenade itself widened so that it can still be used by walkers and cyclists. At the harbour, where a permanent wall would block access to the slipways, steel barriers would be stored nearby and slotted into place when a surge is forecast.

The estimated cost is £11 million, most of which would come from national flood defence funding. The council would need to find about £1.3 million, possibly with contributions from businesses that would benefit.

Engineers from the Environment Office said sea levels at Port Alder had risen by about fifteen centimetres since the existing wall was built in the 1950s, and that further rises were expected over the lifetime of the new defences. "The question is not whether the old town floods again, but when," one engineer told visitors to the exhibition.

Some residents raised concerns about views from seafront properties and about the appearance of the wall. The designers said they had chosen a stepped profile with seating and local stone cladding to soften its impact.

The public consultation runs until 15 December. A planning application is expected next spring, and if approved, construction could start in 2025 and take about two years.""",
    },
    {
        "key": "news/viaduct_appeal",
        "outlet": "courier",
        "date": "2024-03-21",
        "headline": "Heritage railway launches appeal to save Calder viaduct parapets",
        "body": """The volunteers who run the Calder Valley Railway have launched an appeal to raise £350,000 for urgent repairs to the fourteen-arch viaduct that carries the line across the Calder Water.

An inspection in January found that frost had loosened stones in the parapets on both sides of the viaduct, and that water was seeping through the deck into the arches below. Trains are still running, but at reduced speed, and engineers have warned that the structure could be closed next winter if the work is not carried out.

The viaduct, completed in 1874, is a listed structure, which means repairs must use matching stone and lime mortar. The society has secured a grant covering about half of the estimated cost and hopes that supporters and local businesses will make up the rest.

Society chairman Alan Royd said the viaduct was the heart of the line. "Without it, we are a railway that runs to the middle of a field," he said. "Every passenger who has ever looked down at the river from one of our carriages knows what it means to this valley."

The appeal was launched at Holmbridge station with a special train hauled by the railway's oldest working locomotive. Donations can be made online, at either terminus, or by post to the society's office. Anyone giving more than £50 will have their name recorded on a board at Calder Head station.

The railway, which reopened in stages between 1979 and 1997, carries about seventy thousand passengers a year and is almost entirely run by volunteers. Its summer timetable begins on 1 May.""",
    },
    {
        "key": "news/varnholm_lamps",
        "outlet": "cpa",
        "date": "2023-12-18",
        "headline": "Varnholm lamp festival draws record crowds despite storm warning",
        "body": """Tens of thousands of visitors crowded the harbour front of Varnholm over the weekend for the town's annual lamp festival, defying a storm warning that forced organisers to cancel the traditional boat procession to the island of Skarv.

Police estimated that about 31,000 people attended on Saturday evening, the highest number since the festival began in the 1920s and almost five times the population of the town. Every window along the waterfront was lit with candles and lanterns, and long strings of paper lamps were hung between the timber warehouses that survived the great fire of 1904.

The festival marks the first lighting of the Skarv lighthouse in 1857. Normally a procession of fishing boats and small craft carries lanterns out to the island after dark, while the lighthouse answers with a sequence of flashes. This year the harbour master ruled that conditions in the outer fjord were too dangerous, and the boats instead sailed in a slow circle inside the harbour while a choir sang from the quay.

"Of course we were disappointed, but safety comes first," said festival chair Ingrid Solberg. "People told us afterwards that the circle of boats inside the harbour was one of the most beautiful things they had seen. Perhaps we have started a new tradition."

Hotels and guest houses across the region were fully booked, and extra buses and ferries were laid on from neighbouring towns. Local businesses said the weekend was the best of the year for trade.

The storm reached the coast early on Sunday morning, bringing gusts of more than 100 kilometres per hour. Several roads were closed by fallen trees, but no injuries were reported.

Organisers are now considering whether to cap attendance or introduce free timed tickets for next year's festival, after complaints of overcrowding on the narrow streets of the old town.""",
    },
    {
        "key": "news/council_budget",
        "outlet": "courier",
        "date": "2024-01-30",
        "headline": "District council proposes 4.9% council tax rise and cuts to grass cutting",
        "body": """Holmbridge District Council has proposed raising council tax by 4.9 per cent from April, the maximum allowed without a local referendum, as it tries to close a budget gap of £3.8 million.

Under the draft budget published on Monday, a household in a Band D property would pay an extra £1.72 a week. The council also plans to reduce grass cutting on verges and in parks to four times a year, close two public toilets in outlying villages and increase charges for garden waste collection from £48 to £55 a year.

Council leader Simon Achterberg said the authority had no choice. "The cost of looking after vulnerable children and adults has risen far faster than our income," he said. "We have protected libraries, bin collections and the leisure centre, but we cannot protect everything."

Opposition councillors said the cuts to grass cutting would make roads less safe where verges obscure visibility at junctions, and accused the ruling group of spending too much on consultants.

The council says reduced mowing will also benefit wildlife, and that it will continue to cut sightlines at junctions and bends on a safety basis.

Residents have until 16 February to comment on the proposals. Comments can be sent by email to budget.consultation@holmbridge-council.gov.uk, by post to the Civic Centre, or by telephone on 01632 960417 between nine and five on weekdays.

The final budget will be set at a meeting of the full council on 27 February.""",
    },
    {
        "key": "news/robotics_team",
        "outlet": "gazette",
        "date": "2024-03-15",
        "headline": "Port Alder students' underwater robot wins national schools final",
        "body": """A team of six students from Port Alder Academy has won a national schools engineering competition with a remotely operated underwater vehicle built largely from plumbing pipe, bilge pumps and a second-hand camera.

The team, all aged between fourteen and sixteen, beat twenty-three other schools in the final held at a university swimming pool last weekend. Competitors had to guide their robots through an underwater course, recover objects from the bottom of the pool and take measurements of a simulated shipwreck.

The Port Alder robot, nicknamed Limpet, completed every task in the time allowed and scored highest for its engineering presentation, in which the students explained how they had tested their designs in the harbour.

"We lost the first version in the harbour in October, when the tether snapped," said team captain Nia Roskilly, 15. "A fisherman found it in a crab pot two weeks later, and after that we kept a much closer eye on the cable."

Teacher and team coach Joseph Okafor said the students had spent most lunchtimes and many weekends on the project. "What impressed the judges was how much of the work they did themselves," he said. "They designed the control board, wrote the software and raised most of the money for parts by running a stall at the Christmas market."

The team will represent the country at an international competition in the summer and is seeking sponsorship to cover travel. Local businesses who would like to help can contact Mr Okafor at j.okafor@portalder-academy.org.uk.

The academy's head teacher said the whole school was proud and that she hoped the success would encourage more students, particularly girls, to consider engineering careers.""",
    },
    {
        "key": "news/data_breach",
        "outlet": "cpa",
        "date": "2024-02-27",
        "headline": "Online retailer warns customers after hackers access order database",
        "body": """An online outdoor equipment retailer has warned about 48,000 customers that their names, email addresses and postal addresses may have been stolen after criminals gained access to an order database.

Ridgeway Outdoor Supply said it discovered the breach on 19 February, when its security team noticed unusual activity on a server used to process returns. The company said payment card details were not stored on the affected system, although the last four digits of customers' cards were visible in some records.

In an email sent to customers on Monday, the company apologised and advised them to be alert to messages that appear to come from the retailer and ask them to confirm their details or make a payment. It said it would never ask customers for their password or full card number by email or telephone.

The company has reported the incident to the data protection regulator and says it has hired an external firm to investigate how the attackers got in. Early findings suggest they used login details stolen from a supplier.

Security researchers said breaches of this kind were increasingly common among medium-sized online shops, which often rely on many outside services. "Attackers go for the weakest link in the chain, and very often that is a contractor's account with more access than it needs," one researcher said.

Customers with questions can contact the company's incident line on +44 20 7946 0815 or write to privacy@ridgeway-outdoor.co.uk, the company said. It is offering affected customers a year of free credit monitoring.

Shares in the retailer's parent group fell 3 per cent on the news.""",
    },
    {
        "key": "news/fishing_quota",
        "outlet": "cpa",
        "date": "2023-12-12",
        "headline": "Fishing fleets face cod cuts as ministers agree next year's quotas",
        "body": """Ministers agreed on Tuesday to cut the total allowable catch of cod in the northern shelf by 14 per cent next year, following scientific advice that stocks have failed to recover as quickly as hoped.

The decision came after two days of negotiations and was accompanied by increases in the quotas for several other species, including haddock and herring, where stocks are judged to be in good condition. Officials said the overall value of fishing opportunities for the fleet would be broadly similar to this year.

Fishing organisations gave the settlement a cautious welcome. They had feared a deeper cut to cod, which is caught alongside other species and can force boats to stop fishing altogether once their cod quota is used up, a problem known as choke.

Environmental groups said the cut did not go far enough. They pointed out that scientists had advised a reduction of more than 20 per cent and accused ministers of putting short-term income ahead of the long-term health of the stock.

Scientists said warmer water temperatures appear to be pushing cod northwards and reducing the survival of young fish in the southern part of their range, which could mean that the stock never returns to its former size there however the fishery is managed.

The new quotas take effect on 1 January. Individual allocations to producer organisations will be published later this month.""",
    },
    {
        "key": "news/bakery_award",
        "outlet": "courier",
        "date": "2024-05-10",
        "headline": "Holmbridge bakers' rye sourdough named best in the region",
        "body": """A small bakery on Holmbridge's Mill Lane has won the top prize for bread at the regional food and drink awards with a dense rye sourdough flavoured with caraway and black treacle.

Bakehouse No. 7 opened three years ago in a former cobbler's workshop and employs four people. Its owners, Greta Holm and Sam Kirby, start work at four in the morning six days a week and use a rye starter that Greta says she brought back from a baking course in Denmark in a jam jar wrapped in a scarf.

The judges praised the loaf's moist crumb, its balance of sourness and sweetness and the fact that it stayed fresh for several days. "This is bread with real character," one judge wrote. "It tastes of the place it was made."

Greta said the bakery uses flour from a mill in the next valley and that the long fermentation, up to twenty hours, is the secret of the flavour. "People think sourdough is complicated, but it really comes down to patience," she said. "You can't hurry it."

The bakery also won a commendation for its cardamom buns, which regularly sell out before ten o'clock on Saturday mornings.

The owners plan to use some of the prize money to run weekend baking classes for beginners from the autumn.""",
    },
    {
        "key": "news/storm_damage",
        "outlet": "gazette",
        "date": "2024-01-03",
        "headline": "Storm Hester: roofs torn off and power cut to 3,000 homes",
        "body": """By Tom Enys

Storm Hester brought gusts of up to 88 miles per hour to Port Alder overnight, tearing roofs from two houses on Chapel Hill, bringing down power lines and forcing the closure of the coast road for most of Tuesday.

About 3,000 homes across the district lost power at the height of the storm, and some outlying farms were still waiting to be reconnected on Wednesday evening. Engineers were hampered by fallen trees on minor roads.

The lifeboat was launched at two in the morning to a yacht that had broken its mooring in the outer harbour, but nobody was on board and the crew were stood down after securing the vessel. Waves overtopped the sea wall at high tide and flooded part of the seafront car park, but properties in the old town escaped flooding.

Residents of Chapel Hill described hearing a sound like a train as the wind tore slates and timbers from the roofs. One family spent the night with neighbours after their children's bedroom ceiling collapsed. Nobody was injured.

Council workers spent Tuesday clearing debris and checking the sea wall for damage. The council's emergency support line remained open for residents who needed help with temporary accommodation.

Forecasters said a second, weaker area of low pressure would bring further strong winds and heavy rain on Friday.""",
    },
    {
        "key": "news/bus_route",
        "outlet": "courier",
        "date": "2024-02-05",
        "headline": "Villagers fear isolation as Calder Head bus service is cut",
        "body": """Residents of the upper Calder valley say they will be left isolated after the bus operator announced that the number 41 service between Holmbridge and Calder Head will run only three times a day from March, down from hourly.

The company said passenger numbers had not recovered since the pandemic and that the route was losing money even with the council's subsidy. The last bus from Holmbridge will leave at 17:10, meaning that people who work in town cannot get home by bus in the evening.

At a packed meeting in Calder Head village hall on Thursday, residents described how they depend on the service. An 82-year-old woman said it was her only way of getting to the doctor's surgery and the supermarket since she gave up driving. Parents said their teenage children would no longer be able to get to evening jobs and clubs.

The parish council is exploring a community minibus run by volunteers and has asked the district council to consider a demand-responsive service that passengers would book in advance.

The bus company said it would review the timetable in six months and restore services if passenger numbers rose.""",
    },
    {
        "key": "news/housing_scheme",
        "outlet": "gazette",
        "date": "2024-04-24",
        "headline": "Forty homes for local families approved on former cannery site",
        "body": """Plans for forty homes on the site of the old cannery at the eastern end of Port Alder's harbour have been approved, with all of them to be let or sold at below market prices to people with a local connection.

The scheme, led by a community land trust formed by residents in 2019, includes twenty-four flats and sixteen houses, along with workshops for fishing-related businesses on the ground floor facing the quay. The cannery's brick chimney will be kept as a landmark.

House prices in Port Alder have risen sharply over the past decade as holiday homes have taken a growing share of the housing stock. The trust says about one in four homes in the old town is now a second home or holiday let, and that young families who grew up in the town can no longer afford to live there.

Under the trust's rules, the homes can never be sold on the open market or used as holiday lets. Houses will be sold at a price linked to local earnings rather than market values, and the discount will pass to each future buyer.

Construction is due to start in the autumn, subject to the trust securing the final part of its funding.""",
    },
    {
        "key": "news/card_fraud_court",
        "outlet": "courier",
        "date": "2024-03-08",
        "headline": "Man jailed for using cloned cards at Holmbridge cash machines",
        "body": """A 34-year-old man who used cloned bank cards to withdraw more than £18,000 from cash machines in Holmbridge and neighbouring towns has been jailed for two years and eight months.

The court heard that the man was part of a group that fitted skimming devices to cash machines at petrol stations, capturing card details and PINs. Copies of the cards were then used to withdraw cash, usually late at night and in amounts just below the daily limit.

He was caught after a cashier at a filling station on the Halden Road noticed a loose fascia on the machine and called police. Officers found a device hidden inside and later traced the man through CCTV footage and mobile phone records.

He pleaded guilty to conspiracy to commit fraud and possession of articles for use in fraud. His lawyer told the court that he had been pressured into the scheme to pay off debts.

Passing sentence, the judge said skimming caused real hardship to victims, many of whom had been left without money for days while their banks investigated. Police urged people to check card machines for signs of tampering and to cover the keypad when entering their PIN.""",
    },
    {
        "key": "news/keeper_obituary",
        "outlet": "gazette",
        "date": "2024-05-02",
        "headline": "Obituary: Walter Pengelly, last keeper of the Gull Rock light",
        "body": """Walter Pengelly, who has died aged 91, was the last principal keeper of the Gull Rock lighthouse and for many years the best-known storyteller in Port Alder's Ship Inn.

Born in a cottage on Chapel Hill, he went to sea at fifteen on a coastal collier and joined the lighthouse service in 1955. After postings to three rock stations and one on a headland, he was appointed principal keeper at Gull Rock in 1971 and remained there until the light was automated in 1988.

Life on the rock meant a month on duty followed by a month ashore, with three keepers sharing the tower. Walter kept the lens and the brass polished, recorded the weather every three hours and, in fog, kept the diaphone sounding for days at a time. He once spent forty-one days on the rock when storms prevented the relief boat from landing.

After automation he worked as an attendant, visiting the light to carry out maintenance, and became a popular speaker at schools and clubs. His memoir of lighthouse life, written with help from his daughter, was published in 2003.

He is survived by his daughter, two grandsons and three great-grandchildren. His wife, Edna, died in 2016. His funeral will be held at St Odran's Church on 10 May.""",
    },
    {
        "key": "news/seagrass",
        "outlet": "cpa",
        "date": "2024-04-15",
        "headline": "Volunteers plant a million seagrass seeds in bid to restore coastal meadows",
        "body": """Volunteers and marine scientists have finished planting about one million seagrass seeds in sheltered bays along the western coast, in one of the largest attempts yet to restore underwater meadows that once covered much larger areas of the seabed.

Seagrass meadows shelter young fish, stabilise sediment and store carbon, but large areas have been lost over the past century to disease, pollution, dredging and damage from boat anchors and moorings.

The seeds were collected last summer from surviving meadows, stored over winter and then packed into small hessian bags filled with sediment, which were lowered onto the seabed from boats. Divers will monitor the sites over the coming years to see how many seedlings take root.

Project leader Dr Amara Lowe said earlier trials had shown that only a small proportion of seeds survive, but that those that do can spread rapidly. "We are trying to kick-start a natural process," she said. "Once a meadow is established, it improves the conditions around it and helps more plants to grow."

The project has also worked with local sailing clubs to install moorings that do not drag along the seabed.""",
    },
    {
        "key": "news/startup_funding",
        "outlet": "cpa",
        "date": "2024-05-21",
        "headline": "Battery recycling start-up Lumenforge raises $38m",
        "body": """Lumenforge, a company that recovers lithium, nickel and cobalt from used electric vehicle batteries, said on Tuesday it had raised $38 million in new funding to build its first commercial-scale plant.

The company, founded in 2020 by two former researchers from a university chemistry department, has developed a process that uses water-based solutions rather than high-temperature smelting to separate the metals. It says the method uses less energy and recovers a higher proportion of lithium than conventional approaches.

The new plant, to be built on a former steelworks site, is designed to process the equivalent of about 20,000 car batteries a year when it opens in 2026. Lumenforge says it has signed agreements with two carmakers to take used batteries and with a cathode manufacturer to buy the recovered metals.

The funding round was led by an infrastructure investment fund, with participation from existing investors. The company did not disclose its valuation.

Analysts say demand for battery recycling will grow rapidly as the first generation of electric cars reaches the end of its life and as regulations require a minimum share of recycled material in new batteries.

Media contact: Dana Whitfield, Head of Communications, dana.whitfield@lumenforge.io, +1 (628) 555-0173.""",
    },
    {
        "key": "news/live_stub",
        "outlet": "gazette",
        "date": "2024-01-02",
        "headline": "LIVE: Storm Hester updates",
        "body": """This page will be updated throughout the night. Refresh for the latest.

22:41 More to follow.

22:15 More to follow.""",
    },
    {
        "key": "news/de_radwege",
        "outlet": "kuestenbote",
        "date": "2024-03-12",
        "headline": "Stadtrat beschließt neues Radwegenetz für die Innenstadt",
        "body": """Von Henrike Albers

Der Stadtrat hat am Montagabend mit großer Mehrheit ein neues Radwegenetz für die Innenstadt beschlossen. Bis 2027 sollen auf insgesamt elf Kilometern geschützte Radfahrstreifen entstehen, die durch Bordsteine oder Poller vom Autoverkehr getrennt sind. Die Kosten werden auf rund 6,5 Millionen Euro geschätzt, von denen das Land etwa zwei Drittel übernehmen will.

Kernstück des Plans ist eine durchgehende Verbindung vom Bahnhof über die Hafenstraße bis zum Schulzentrum am Deich. Auf der Hafenstraße soll dafür eine der beiden Fahrspuren stadteinwärts wegfallen. Außerdem sollen an allen größeren Kreuzungen eigene Ampelphasen für den Radverkehr eingerichtet werden.

Oberbürgermeisterin Katrin Wessels sprach von einem wichtigen Schritt für die Verkehrswende. „Wer heute mit dem Rad zur Arbeit oder zur Schule fährt, muss sich sicher fühlen können. Daran hapert es bisher an vielen Stellen“, sagte sie.

Kritik kam von Teilen des Einzelhandels. Die Werbegemeinschaft Innenstadt befürchtet, dass weniger Parkplätze und eine schmalere Hafenstraße Kundinnen und Kunden aus dem Umland abschrecken könnten. Die Verwaltung verweist dagegen auf Erfahrungen aus anderen Städten, in denen die Umsätze nach dem Ausbau der Radwege nicht gesunken seien.

Die ersten Bauarbeiten sollen im Herbst an der Deichstraße beginnen. Anwohnerinnen und Anwohner werden vorher in einer Informationsveranstaltung im Rathaus über die Einzelheiten unterrichtet.""",
    },
    {
        "key": "news/de_sturmflut",
        "outlet": "kuestenbote",
        "date": "2024-01-14",
        "headline": "Sturmflutwarnung: Hafenbereich am Sonntag gesperrt",
        "body": """Das Bundesamt für Seeschifffahrt und Hydrographie hat für die Nacht zum Sonntag eine Sturmflutwarnung für die gesamte Küste herausgegeben. Das Hochwasser soll am frühen Morgen etwa 1,8 bis 2,1 Meter über dem mittleren Hochwasser eintreten.

Die Stadt hat vorsorglich den Hafenbereich, den Parkplatz am Alten Fischmarkt und die Uferpromenade gesperrt. Fahrzeuge, die dort abgestellt sind, müssen bis Samstag um 20 Uhr entfernt werden. Die Fluttore an der Schleusenstraße werden am Abend geschlossen.

Der Deichverband rechnet nicht mit Schäden an den Hauptdeichen, bittet aber darum, die Deiche während der Sturmflut nicht zu betreten. Schaulustige behinderten bei der letzten Sturmflut im Oktober die Einsatzkräfte.

Für Fragen hat die Stadt ein Bürgertelefon eingerichtet, das am Samstag von 8 bis 22 Uhr unter 04721 / 89 63 20 erreichbar ist. Aktuelle Informationen gibt es außerdem im Radio und auf der Internetseite der Stadt.""",
    },
]
