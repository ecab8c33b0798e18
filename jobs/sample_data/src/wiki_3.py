"""Encyclopedia articles, part 3 (authored for the datapipe sample corpus)."""

ARTICLES = [
    {
        "key": "wiki/mortise_and_tenon",
        "title": "Mortise and tenon",
        "text": """A mortise and tenon is a type of joint that connects two pieces of wood or other material. Woodworkers around the world have used it for thousands of years to join pieces of wood, mainly when the adjoining pieces connect at right angles. In its basic form it is both simple and strong, and it remains one of the most important joints in furniture making and timber framing.

## Description

The joint has two components. The mortise is a cavity cut into one piece, usually rectangular. The tenon is a projection formed on the end of the other piece by cutting away shoulders on one or more sides, so that it fits closely into the mortise. The joint may be glued, pinned with wooden pegs, wedged, or held by a combination of these. A well-fitted joint resists forces in several directions, because the shoulders of the tenon bear against the face of the mortised piece and prevent racking.

## Variations

Many variations have been developed for particular purposes:

- the through mortise and tenon, in which the tenon passes completely through the mortised piece and is visible on the far side, often wedged to lock it in place;
- the stub or blind tenon, which stops short of the far face and is hidden;
- the haunched tenon, used at the corners of frames, in which a small shoulder fills the groove for a panel;
- the tusk tenon, which passes through the mortise and is held by a removable wedge, so that the joint can be taken apart;
- the loose tenon, a separate piece of wood inserted into mortises cut in both components.

## Timber framing

In traditional timber-framed buildings, heavy posts and beams are joined almost entirely by mortise and tenon joints secured with tapered oak pegs. Carpenters drill the holes in the tenon slightly offset from those in the mortise, a technique called draw boring, so that driving the peg pulls the joint tight. Frames were often cut and test-assembled in a yard, marked with carpenters' numerals, then taken apart and raised on site.

## Tools

By hand, a mortise is usually cut with a mortise chisel, which has a thick blade designed to withstand levering, after the waste has sometimes been removed with a drill. Tenons are cut with a tenon saw and refined with chisels or a shoulder plane. Powered tools, including hollow-chisel mortisers, routers and specialised machines, are used in workshops and factories.""",
    },
    {
        "key": "wiki/homing_pigeon",
        "title": "Homing pigeon",
        "text": """The homing pigeon is a variety of domestic pigeon derived from the wild rock dove, selectively bred for its ability to find its way home over extremely long distances. Homing pigeons have been used to carry messages for thousands of years, a practice known as pigeon post, and they are now bred mainly for the sport of pigeon racing.

## Navigation

How pigeons find their way home has been studied for more than a century and is still not fully understood. Experiments indicate that they use several cues. Pigeons can orient themselves using the position of the Sun, compensating for its movement with an internal clock. They appear to be sensitive to the Earth's magnetic field, which may help them on overcast days. Familiar landmarks such as coastlines, rivers and roads are important near home, and some research suggests that smells carried on the wind or very low-frequency sounds also play a part.

## Pigeon post

Because a pigeon flies only to its home loft, messages could be sent in one direction only: birds had to be carried away from home in advance, often in baskets on horseback or by ship. Pigeons were used to announce the results of sporting events, to carry stock prices and news, and to send messages from besieged cities. In the nineteenth century, messages photographed onto tiny pieces of film were carried by pigeons and then projected onto a screen to be read. Armies used pigeons extensively in both world wars, and some birds were decorated for carrying messages under fire.

## Racing

In pigeon racing, birds from many lofts are transported together to a release point, which may be hundreds of kilometres away. The time each bird arrives at its own loft is recorded, and its speed is calculated from the exact distance between the release point and the loft. Traditionally, a rubber ring on the bird's leg was removed and placed in a sealed clock when it arrived; electronic rings and readers are now common. The sport is particularly popular in Belgium, the Netherlands, Britain, Poland and parts of Asia.

## Care

Racing pigeons are kept in lofts with good ventilation, regular feeding and daily exercise flights. Fanciers select birds for breeding on the basis of their race results and pedigrees, and good birds can be sold for large sums.""",
    },
    {
        "key": "wiki/calder_valley_railway",
        "title": "Calder Valley Railway",
        "text": """The Calder Valley Railway is a heritage railway running for eleven kilometres between the market town of Holmbridge and the village of Calder Head, following the upper valley of the Calder Water. The line was built as a branch of a regional railway company in the 1870s, closed to passengers in 1958 and to goods in 1964, and was reopened in stages by a volunteer preservation society between 1979 and 1997. It operates steam and heritage diesel trains, mainly at weekends and during school holidays.

## Construction

Proposals for a railway up the valley were made as early as the 1840s, when several small mills along the river relied on carts to bring coal and take away cloth. A first scheme failed to raise enough money, and it was not until 1871 that a company was formed with the support of the mill owners and a larger neighbouring railway, which agreed to work the line. Construction took four years. The line required two viaducts, the larger of which carries the railway across the river on fourteen stone arches, and a short tunnel under the ridge near Calder Head.

The railway opened on 3 June 1875. It had four intermediate stations, serving the mills and villages of the valley, and a small engine shed at the terminus. The original company was absorbed into the larger railway in 1884.

## Operation under the main-line companies

For most of its working life the branch was served by a few passenger trains a day, usually a single tank engine pulling two or three carriages, and by daily goods trains. Coal for the mills and for domestic fires formed the main inward traffic, while textiles, stone from the quarries above Calder Head and milk from the farms were carried outwards. In summer, excursion trains brought visitors from the industrial towns to walk on the moors.

Traffic declined steadily after the First World War as buses served the villages more conveniently and road haulage took much of the goods traffic. Two of the intermediate stations were closed in the 1930s. Following the nationalisation of the railways after the Second World War, the branch was reviewed among many lightly used lines, and passenger services were withdrawn in September 1958. A goods service continued to the quarry until 1964, after which the track was lifted beyond Holmbridge.

## Preservation

A preservation society was formed in 1968 by a group of local residents and railway enthusiasts who hoped to reopen the line. Progress was slow at first. The society had to buy the trackbed from the railway authorities, raise money for new track, and persuade the local council that trains would bring visitors rather than nuisance. Much of the early work was done by volunteers at weekends, clearing vegetation, repairing drains and rebuilding platforms.

The first section, from Holmbridge to Mill Lane, reopened in 1979 with a small industrial steam locomotive and two former main-line carriages. Extensions followed in 1985 and 1991, the second requiring extensive repairs to the large viaduct, whose parapets had been damaged by frost. The final section through the tunnel to Calder Head opened in 1997 after the tunnel lining was reinforced. The station buildings at Calder Head, which had been used as a house, were bought by the society and restored to their appearance in the 1920s.

## Rolling stock

The railway owns eight steam locomotives, of which three are usually in working order at any time, the others awaiting or undergoing overhaul. Most are tank engines of types that worked on similar branch lines, together with two industrial locomotives that once shunted at collieries. Several diesel locomotives and a two-car diesel multiple unit are used on quieter days and for engineering work. The carriage fleet includes vehicles from the 1930s to the 1960s, among them a restored saloon used for special dining trains.

Overhauling a steam locomotive is expensive. The boiler must be inspected and certified at regular intervals, and a major overhaul, which may involve replacing many of the tubes and the firebox, can take several years and cost hundreds of thousands of pounds. The society raises money through appeals, grants and the sale of shares in individual locomotives to supporters.

## Today

The railway carries about seventy thousand passengers a year. Apart from the regular timetable, it runs special events including galas with visiting locomotives, wartime weekends, Christmas trains and courses in which members of the public can learn to drive and fire a steam engine. The engine shed at Calder Head contains a small museum of signalling equipment and photographs of the line in its working days.

The railway is run almost entirely by volunteers, who work as drivers, firemen, guards, signal operators, station staff, ticket clerks, caterers and track workers. Volunteers must pass assessments before they can take on safety-critical roles, and it may take years to progress from cleaner to driver. A small paid staff manages the business and the engineering workshop.

The railway is also a significant local employer and attraction. A study commissioned by the district council estimated that visitors to the line spend several million pounds a year in the valley's shops, cafés and guest houses. Proposals to extend the railway beyond Holmbridge to connect with the main line have been discussed several times but would require new bridges over a road and a river, and no extension has yet been approved.

## Incidents

In 2002 a section of embankment near Mill Lane slipped after prolonged heavy rain, closing the line for five months while the bank was rebuilt with stone drainage. A minor collision between a locomotive and a carriage in the yard at Holmbridge in 2011 caused no injuries but led to changes in the society's shunting procedures.""",
    },
    {
        "key": "wiki/kiln",
        "title": "Kiln",
        "text": """A kiln is a thermally insulated chamber, a type of oven, that produces temperatures sufficient to complete some process, such as hardening, drying or chemical changes. Kilns have been used for millennia to turn objects made from clay into pottery, tiles and bricks. They are also used for firing glass, drying timber and hops, and producing lime and cement.

## Firing pottery

When clay is heated, it first loses the water that made it plastic. At higher temperatures the chemically bound water is driven off and the clay undergoes irreversible changes, becoming hard ceramic. Earthenware is fired at relatively low temperatures and remains porous unless glazed. Stoneware and porcelain are fired much hotter, until the clay partly melts and becomes dense and watertight. Many potters fire their work twice: a first, lower firing called the bisque makes the ware strong enough to handle and glaze, and a second, higher firing melts the glaze into a glassy coating.

## Types of kiln

The simplest method of firing is the open bonfire or pit, in which pots are surrounded by fuel and burned. Updraught kilns have a firebox beneath the chamber, and the heat rises through the ware and out through a chimney. In downdraught kilns, a more efficient design, the hot gases rise to the roof of the chamber, are drawn down through the ware and leave through flues in the floor. Climbing kilns built on slopes, with a series of chambers rising one above another, were developed in East Asia and could fire large numbers of pots at once.

Modern studio kilns are usually heated by electricity or gas. Electric kilns are clean and easy to control with programmable controllers, and they fire in an oxidising atmosphere. Gas and wood kilns allow the potter to starve the fire of oxygen during part of the firing, a process called reduction, which changes the colour of clay bodies and glazes containing iron and copper.

## Wood firing

Some potters fire in large wood-burning kilns over several days. Ash from the fuel settles on the pots and melts into natural glazes, and the path of the flame leaves marks on the surface, so that no two pieces are alike. Wood firing requires a team of people to stoke the fire continuously and a large supply of dry wood.""",
    },
    {
        "key": "wiki/allotment",
        "title": "Allotment (gardening)",
        "text": """An allotment garden, often called simply an allotment, is a plot of land made available for individual, non-commercial gardening. Such plots are formed by subdividing a piece of land into a few or up to several hundred parcels that are assigned to individuals or families. In some countries the plots are rented from the local council, while in others they are managed by associations.

## History

Allotments developed in Europe during the nineteenth century, when industrialisation drew people from the countryside into crowded towns. Landowners, churches and reformers provided small plots on which the working poor could grow food, supplementing low wages and, it was argued, encouraging healthy outdoor activity. Laws in several countries later required local authorities to provide allotments where there was demand. During both world wars, campaigns to grow food at home led to a great increase in the number of plots, often on parks and sports fields.

## Layout and use

A typical allotment site contains many rectangular plots separated by grass paths, with a shared water supply, a store for tools and materials, and sometimes a meeting hut. Plot holders grow vegetables, fruit and flowers, and many build sheds, greenhouses and compost bins. Rules generally forbid commercial sale of produce, limit the keeping of animals and require plots to be kept in cultivation. In some countries, particularly in central Europe, allotment gardens include substantial summer houses where families spend weekends.

## Social role

Allotments are valued as places where neighbours from different backgrounds meet and share knowledge, seeds and surplus produce. Annual shows with competitions for the largest vegetables and the best displays are a long tradition on many sites. Studies have linked gardening on allotments with physical and mental health benefits.

## Waiting lists

In many cities demand for plots far exceeds supply, and waiting lists can run to several years. Some councils have responded by dividing plots into smaller units, and community groups have created new growing spaces on unused land.""",
    },
    {
        "key": "wiki/escapement",
        "title": "Escapement",
        "text": """An escapement is a mechanical linkage in mechanical watches and clocks that gives impulses to the timekeeping element and periodically releases the gear train to move forward, advancing the clock's hands. The impulse action transfers energy to the clock's timekeeping element, usually a pendulum or balance wheel, to replace the energy lost to friction during its cycle and keep it oscillating. The escapement is driven by force from a coiled spring or a suspended weight, transmitted through the clock's gear train.

## How it works

Each swing of the pendulum or balance wheel releases a tooth of the escapement's wheel, allowing the gear train to advance by a fixed amount. Because the pendulum swings at a steady rate, the hands move forward at a steady rate. The characteristic ticking sound of a mechanical clock is the sound of the escape wheel's teeth striking the pallets, the parts of the escapement that engage them.

## Verge escapement

The earliest mechanical clocks, which appeared in Europe in the thirteenth and fourteenth centuries, used the verge escapement. A vertical rod, the verge, carried two small plates called pallets that alternately engaged the teeth of a crown-shaped wheel. The verge was attached to a horizontal bar with weights at its ends, called a foliot, which swung back and forth. These clocks were not very accurate and could gain or lose a quarter of an hour a day.

## Anchor escapement

The anchor escapement, introduced in the second half of the seventeenth century, works with a pendulum swinging through a small arc. Its pallets are shaped like a ship's anchor. Combined with the pendulum, it greatly improved accuracy, and it became the standard escapement in longcase clocks for more than two centuries. A refinement called the deadbeat escapement eliminated the slight backward movement, or recoil, of the escape wheel and was used in precision clocks.

## Watch escapements

Portable clocks and watches cannot use a pendulum and instead rely on a balance wheel with a spiral hairspring. The lever escapement, invented in the eighteenth century, became the standard in mechanical watches because it is robust and allows the balance to swing freely for most of its cycle.

## Later developments

Mechanical escapements have largely been replaced in everyday timekeeping by quartz oscillators and atomic standards. They remain central to fine watchmaking, where makers continue to experiment with new designs and materials.""",
    },
    {
        "key": "wiki/snowshoe",
        "title": "Snowshoe",
        "text": """A snowshoe is footwear for walking over snow. Snowshoes work by distributing the weight of the person over a larger area so that the person's foot does not sink completely into the snow, a quality called flotation. Traditional snowshoes have a hardwood frame with rawhide lacings, while modern designs use light metal or plastic frames and synthetic decking.

## History

Snowshoes were developed independently by several peoples of cold regions, and they were essential for winter travel and hunting in the northern forests of North America and Eurasia. The shapes of traditional snowshoes varied with the snow conditions and terrain. Long, narrow shoes with upturned toes were suited to open country and deep powder, while short, round shoes, sometimes called bearpaws, were easier to manoeuvre in dense woods. European settlers in North America adopted snowshoes from the indigenous peoples, and they were used by trappers, traders and soldiers.

## Construction

A traditional snowshoe frame is made by steaming a strip of ash or another flexible hardwood and bending it into shape around a form, with crossbars holding the sides apart. The frame is filled with a webbing of rawhide strips, woven more tightly under the foot. The foot is attached with a binding of leather straps that holds the toe but leaves the heel free to rise with each step.

Modern snowshoes are usually made of an aluminium frame with a deck of durable plastic fabric. Bindings pivot under the ball of the foot, and metal crampons beneath the binding give grip on ice and steep slopes. Many models have heel lifts that can be raised to reduce strain when climbing.

## Recreation

Snowshoeing has become a popular winter activity because it requires little training and allows walkers to explore trails that are covered in snow. Organised snowshoe races are held in many countries, and some ski resorts maintain dedicated snowshoe routes. Walkers in avalanche terrain need the same knowledge and equipment as other winter mountaineers.""",
    },
    {
        "key": "wiki/seed_bank",
        "title": "Seed bank",
        "text": """A seed bank stores seeds to preserve genetic diversity for the future. Seeds of crops and wild plants are dried and kept at low temperatures so that they remain alive for decades or even centuries, and they can be used to restore lost varieties, to breed new crops or to reintroduce plants to the wild. Seed banks range from small community collections to large national and international facilities.

## Why seeds are stored

The diversity of crop varieties has declined sharply as farmers around the world have adopted a smaller number of high-yielding types. Older local varieties, known as landraces, may carry genes for resistance to pests and diseases or tolerance of drought and heat that could be valuable to plant breeders. Wild relatives of crops are also collected for the same reason. Seed banks act as insurance against the loss of these resources through changes in farming, habitat destruction, war or natural disaster.

## Methods

Seeds arriving at a seed bank are cleaned, counted and tested for viability. They are then dried to a low moisture content and sealed in airtight containers before being stored in freezers, typically at minus eighteen degrees Celsius. Under these conditions the seeds of many species remain viable for a very long time. Samples are germinated at intervals to check that they are still alive, and when viability falls the collection is regenerated by growing plants and harvesting fresh seed.

Not all seeds can be stored in this way. Seeds of some tropical trees, such as those of cocoa and many rainforest species, are killed by drying and are called recalcitrant. These plants are preserved instead as living collections in field gene banks, or by freezing small pieces of tissue in liquid nitrogen.

## Global collections

Major crop research centres maintain large collections of the staple crops they study, and many countries have national gene banks. A secure facility built inside a mountain on a remote Arctic island holds duplicate samples from seed banks around the world, providing a backup in case the originals are lost. Samples deposited there remain the property of the institutions that sent them.

## Community seed banks

At a local level, gardeners and farmers run seed libraries and swaps in which seeds of open-pollinated varieties are exchanged and grown out each year, keeping regional varieties in use.""",
    },
    {
        "key": "wiki/ferry",
        "title": "Ferry",
        "text": """A ferry is a ship, watercraft or amphibious vehicle used to carry passengers, and sometimes vehicles and cargo, across a body of water. A passenger ferry with many stops, such as in Venice, is sometimes called a water bus or water taxi. Ferries form a part of the public transport systems of many waterside cities and islands, allowing direct transit between points at a capital cost much lower than bridges or tunnels.

## Types

Ferries range from small boats pulled across a river on a fixed cable to large ships carrying thousands of passengers and hundreds of cars on overnight voyages. Roll-on roll-off ferries have doors at the bow, the stern or both, so that vehicles can drive on at one port and off at the next without turning. Double-ended ferries have a wheelhouse and propellers at each end and never need to turn around, which makes them well suited to short crossings with frequent departures. Fast ferries, including catamarans and hydrofoils, trade capacity for speed on busy routes. Cable ferries and chain ferries, guided by a line across the water, are used on rivers and narrow channels where the current is strong.

## History

Ferries are among the oldest forms of transport. For centuries, rivers were crossed by rowing boats and flat-bottomed barges pushed with poles, and the right to operate a ferry was often a valuable privilege granted by a ruler or a town. Steam power transformed ferry services in the nineteenth century, and railway companies built ferries that could carry entire trains across straits and estuaries.

## Safety

Most ferry services have a good safety record, but a number of serious accidents have led to changes in design and regulation. Some disasters involved water entering the open vehicle deck of roll-on roll-off ships, where even a small amount of water can make the ship unstable. Regulations now require improved subdivision, monitoring of bow doors and better evacuation arrangements. Overloading of ferries remains a problem on some routes in countries where enforcement is weak.

## Environmental impact

Many operators are introducing ferries powered by batteries or by liquefied natural gas to reduce emissions. Short crossings with long stops at each end are particularly suited to electric ferries, which can recharge while loading.""",
    },
    {
        "key": "wiki/feast_of_st_odran",
        "title": "Feast of St. Odran (Port Alder)",
        "text": """The Feast of St. Odran is an annual festival held in the harbour town of Port Alder on the last weekend of August. It combines a religious procession, a blessing of the fishing fleet and a two-day fair, and it is one of the largest public events on that part of the coast. The festival is named after the patron of the town's oldest church, a saint traditionally associated with boatmen.

## Origins

Records of a fair held in Port Alder on the saint's day go back to the sixteenth century, when it was an occasion for the hiring of farm labourers and the sale of livestock and cloth. The blessing of the boats was added in the late nineteenth century, at a time when the fishing fleet was at its largest and losses at sea were common. The festival lapsed during the Second World War and was revived in 1948 by a committee of fishermen and shopkeepers.

## Programme

On the Saturday morning, a procession carrying a carved wooden figure of the saint leaves the church and winds through the old streets to the harbour, accompanied by a brass band and children from local schools. At the quay, a service is held and the clergy bless the boats, which are decorated with flags and bunting. The fleet then sails in line across the bay and back while crowds watch from the harbour wall.

The fair occupies the harbour car park and the streets of the old town for the rest of the weekend, with stalls selling food, crafts and local produce, fairground rides and live music. Traditional events include a rowing race between crews from neighbouring villages, a greasy pole competition over the water and a crab-catching contest for children. The weekend ends with fireworks over the harbour on Sunday night.

## Organisation

The festival is organised by a volunteer committee with support from the town council. Funding comes from stall fees, sponsorship by local businesses and a street collection. In recent years the committee has taken steps to reduce litter and to make the event accessible, including a quiet area for families and a park-and-ride service from the edge of town.""",
    },
    {
        "key": "wiki/bookbinding",
        "title": "Bookbinding",
        "text": """Bookbinding is the process of physically assembling a book of codex format from an ordered stack of paper sheets that are folded together into sections called signatures or sometimes left as a stack of individual sheets. Several signatures are then bound together along one edge with a thick needle and sturdy thread, or with a layer of flexible adhesive.

## Hand binding

In traditional hand binding, printed sheets are folded into signatures, collated in order and sewn through the fold onto cords or tapes that run across the spine. The ends of the cords are laced into boards of wood or, later, pasteboard, which form the covers. The spine is glued, rounded with a hammer and backed to form shoulders against which the boards sit. Finally the book is covered in leather, cloth or paper, and the covers may be decorated with tooling in gold leaf or blind impressions made with heated brass tools.

## Historical development

The codex, a book of folded leaves bound along one edge, gradually replaced the scroll in the Mediterranean world during the first centuries of the common era. Early bindings used wooden boards covered in leather, sometimes with metal clasps to keep the parchment pages flat. For several centuries after the introduction of printing, books were often sold unbound in sheets, and the buyer arranged for a binder to cover them to order, which is why books from the same edition can have very different bindings.

## Industrial binding

In the nineteenth century, machines for folding, sewing and casing were introduced, and publishers began to issue books already bound in cloth covers. In a cased book, the covers are made separately and attached to the sewn text block with glue and paper endsheets. Paperback books are usually bound by cutting off the folds and gluing the loose edges of the sheets into the cover, a method called perfect binding. Lay-flat bindings use flexible adhesives that allow the book to stay open.

## Conservation

Book conservators repair damaged bindings using materials and techniques that can be reversed in future, such as wheat starch paste and Japanese tissue. They aim to preserve as much of the original structure as possible, because the binding itself is evidence of how and when a book was made and used.""",
    },
    {
        "key": "wiki/cheese_ripening",
        "title": "Cheese ripening",
        "text": """Cheese ripening, also called affinage, is the process that transforms fresh curd into a cheese with a characteristic flavour, aroma and texture. During ripening, enzymes from the milk, from the rennet used to coagulate it and from bacteria, yeasts and moulds break down proteins, fats and the remaining milk sugar. The length of ripening ranges from a few days for soft cheeses to several years for hard cheeses intended for grating.

## Conditions

Cheeses are ripened in rooms or caves where temperature and humidity are carefully controlled. Most are kept cool, between about eight and fourteen degrees Celsius, with high humidity to prevent them from drying out and cracking. Natural caves, with their stable conditions, were traditionally used in many regions, and some cheeses can legally carry their name only if they have been ripened in particular caves.

## Rinds

The outer surface of a ripening cheese develops a rind that protects the interior and contributes to its flavour. Natural rinds form as the surface dries and is colonised by microorganisms from the environment. Bloomy rinds are the white, velvety coats produced by moulds sprayed onto soft cheeses. Washed-rind cheeses are rubbed or brushed regularly with brine, beer, wine or spirits, which encourages bacteria that give an orange colour and a strong smell, although the interior of such cheeses is often mild. Some hard cheeses are bound in cloth rubbed with lard, while others are coated in wax to prevent moisture loss.

## Work of the affineur

An affineur, a specialist in ripening, turns the cheeses regularly so that moisture is evenly distributed and the rind forms evenly. Depending on the type, cheeses may be brushed, washed, pierced to admit air for the growth of blue moulds, or wrapped. The affineur tastes samples drawn with a cheese iron and decides when each cheese is ready. Some cheese shops buy young cheeses from farms and finish them in their own cellars.

## Changes during ripening

As proteins break down, a young rubbery curd becomes softer and creamier, or, in hard cheeses, develops a granular texture with small crunchy crystals of amino acids. The breakdown of fats produces many of the sharper and more complex flavours. Gas produced by certain bacteria creates the holes in some mountain cheeses.""",
    },
    {
        "key": "wiki/reetdach",
        "title": "Reetdach",
        "text": """Ein Reetdach ist eine Dachdeckung aus getrocknetem Schilfrohr, das im norddeutschen Sprachraum als Reet oder Ried bezeichnet wird. Reetgedeckte Häuser sind besonders in den Küstenregionen an Nord- und Ostsee, in den Niederlanden, in Dänemark und in Teilen Englands verbreitet, wo das Material in großen Mengen an Flussmündungen und Seeufern wächst. Neben Schilf wurden früher auch Stroh, Heidekraut und Binsen zum Decken von Dächern verwendet.

## Geschichte

Weiche Bedachungen aus Pflanzenmaterial gehören zu den ältesten Dachformen überhaupt. Über Jahrhunderte waren sie auf dem Land die Regel, weil das Material vor Ort geerntet werden konnte und kaum Kosten verursachte. Wegen der Brandgefahr erließen viele Städte jedoch schon im Spätmittelalter Verbote für weiche Dächer, und im neunzehnten Jahrhundert verdrängten Ziegel und Schiefer das Reet auch in vielen Dörfern. Erst seit den 1970er-Jahren erlebt das Reetdach eine gewisse Wiederbelebung, vor allem bei Ferienhäusern und denkmalgeschützten Gebäuden.

## Herstellung

Das Reet wird im Winter geerntet, wenn die Halme trocken sind und die Blätter abgefallen sind. Die Bunde werden auf den Dachlatten ausgelegt und mit Draht oder Bindegarn an der Unterkonstruktion befestigt. Der Reetdachdecker arbeitet sich von der Traufe bis zum First vor und klopft die Halme mit einem Brett, dem sogenannten Klopfer, in die richtige Lage. Eine fachgerecht verlegte Deckung ist etwa dreißig Zentimeter dick. Der First wird traditionell mit Heidekraut, Grassoden oder heute oft mit einer Kappe aus Kupfer oder Ton abgedeckt.

## Eigenschaften

Ein Reetdach dämmt gut gegen Hitze und Kälte und lässt Feuchtigkeit aus dem Dachraum entweichen. Bei ausreichender Dachneigung und guter Belüftung hält eine Deckung dreißig bis fünfzig Jahre, auf der wetterabgewandten Seite oft länger. Nachteilig sind die hohe Brandlast, die zu höheren Versicherungsbeiträgen führt, sowie der Befall durch Moose und Algen an schattigen Stellen. Moderne Häuser erhalten deshalb häufig eine feuerhemmende Unterdeckung oder eine Sprinkleranlage im Dachraum.

## Handwerk

Das Reetdachdeckerhandwerk wird in Deutschland als eigenständige Fachrichtung des Dachdeckerhandwerks ausgebildet. Da einheimisches Reet knapp geworden ist, stammt ein großer Teil des verarbeiteten Materials inzwischen aus Osteuropa und Asien.""",
    },
]
