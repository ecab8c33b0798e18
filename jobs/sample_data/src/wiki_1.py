"""Encyclopedia articles, part 1 (authored for the datapipe sample corpus).

Markup: paragraphs separated by blank lines, `## ` section headings, `- ` list items.
The parquet `text` column holds the plain-text rendering (heading markers removed).
"""

ARTICLES = [
    {
        "key": "wiki/lighthouse",
        "title": "Lighthouse",
        "text": """A lighthouse is a tower, building or other framework designed to emit light from a system of lamps and lenses in order to serve as a navigational aid for ships at sea or on inland waterways. Lighthouses mark dangerous coastlines, hazardous shoals, reefs and rocks, and the safe entries to harbours. They also help with aerial navigation in some remote regions. Although their number has declined since the arrival of satellite navigation, many remain in service and a large number have been preserved as historic monuments.

## Early history

Before purpose-built towers existed, sailors relied on fires lit on hilltops and headlands. Such beacons were simple to build but difficult to keep burning in bad weather, which is exactly when they were needed most. The earliest lighthouses of the ancient Mediterranean were tall stone structures with an open fire at the top, and some of them became famous far beyond the ports they served. Writers of the classical period describe towers that could be seen from a great distance out to sea, although modern historians treat many of these figures with caution.

Through the medieval period, lights were often kept by religious houses or by merchants' guilds, who had an obvious interest in the safe arrival of cargo. The quality of these lights varied enormously. A candle lantern in a chapel window might be the only warning a coasting vessel received, and shipwreck was a common feature of life in many harbour towns.

## Construction

The design of a lighthouse depends on where it stands. Towers on land can be built of brick or masonry with relatively little difficulty, but towers on exposed rocks offshore present some of the hardest problems in civil engineering. The builders must work only at low tide and in calm weather, and the finished structure has to resist the full force of storm waves. Engineers in the eighteenth century found that interlocking granite blocks, dovetailed both horizontally and vertically, produced a tower that behaved almost as a single mass of stone. This technique was copied for more than a century.

Later towers were also built of cast iron, which could be prefabricated in sections, shipped to a remote site and bolted together. Iron towers were cheaper and faster to erect, and many were used on the coasts of colonies and on lake shores. In the twentieth century reinforced concrete became common, and small automatic lights are now often mounted on simple steel masts.

A typical tower contains a spiral staircase, store rooms for fuel, and the lantern room at the top. The lantern room is glazed on all sides and surrounded by an external gallery, from which the keepers cleaned the windows. Keepers' cottages were usually built close to the tower, and at offshore stations the keepers lived inside the tower itself, sometimes for weeks at a time.

## Light sources and optics

Early lights burned wood, coal or candles. In the late eighteenth century the oil lamp with a hollow circular wick and a glass chimney gave a much brighter and steadier flame, and it was soon combined with polished metal reflectors. The decisive improvement came in the 1820s with the Fresnel lens, which uses concentric rings of glass prisms to bend light from the lamp into a horizontal beam. A Fresnel lens is much thinner and lighter than a conventional lens of the same focal length, and it wastes far less light.

Lenses were graded by size into orders. The largest, first-order lenses stood taller than a person and were used at major coastal lights, while the smaller orders served harbours and rivers. Paraffin vapour burners, acetylene gas and finally electric lamps replaced the oil lamp. Today many stations use light-emitting diodes, which need little power and can run for long periods on solar panels and batteries.

## Identification

Each lighthouse shows a distinctive pattern so that a navigator can tell one light from another. The pattern, called the characteristic, may be a fixed light, a single flash at a given interval, groups of flashes, or occulting lights that are on longer than they are off. Colour is also used; red and green sectors often mark dangerous waters or the sides of a channel. In daylight, towers are identified by their shape and their painted daymark, such as horizontal bands or a chequered pattern. Lists of lights published by national authorities record the characteristic, height and range of every light on the coast.

## Keepers and automation

For most of their history lighthouses were staffed by keepers who trimmed wicks, wound the clockwork that turned the lens, kept logs of the weather and passing ships, and sounded fog signals. The work was monotonous and occasionally dangerous, and keepers at offshore stations could be cut off for long periods by storms. Automation began in the early twentieth century and accelerated after the Second World War. By the end of the century almost all lighthouses in Europe and North America were unattended, monitored remotely and visited only for maintenance.

## Preservation

Many lighthouses that are no longer needed for navigation have been preserved by local societies, national trusts or private owners. Some have been converted into museums, holiday cottages or observatories for birdwatchers. Preservation is not always straightforward: coastal erosion threatens towers built close to cliff edges, and several historic towers have been moved inland on rails at considerable expense. Lighthouses remain popular subjects for painters and photographers, and their image is widely used as a symbol of guidance and safety.""",
    },
    {
        "key": "wiki/sourdough",
        "title": "Sourdough",
        "text": """Sourdough is bread made by the fermentation of dough using naturally occurring lactic acid bacteria and wild yeasts rather than commercially produced baker's yeast. The bacteria produce lactic and acetic acids, which give the bread its slightly sour taste and improve its keeping qualities. Sourdough was the usual way of leavening bread for most of history, and it has enjoyed a strong revival among home bakers since the early 2000s.

## The starter

A sourdough starter, also called a leaven or mother, is a mixture of flour and water in which a stable community of yeasts and bacteria has become established. A baker begins a starter by mixing equal weights of flour and water and leaving the mixture at room temperature. Over the following days, part of the mixture is discarded and the remainder is fed with fresh flour and water. After about a week the starter rises and falls predictably after each feeding and smells pleasantly sour, at which point it can be used to raise bread.

The microbial population of a starter depends on the flour, the water, the temperature and the feeding schedule more than on the place where the starter is kept. Rye flour tends to produce a vigorous starter because it contains more of the nutrients that microbes need. Many bakers keep a starter for years and some claim that theirs is decades old, although the population inside it changes constantly.

## Method

A typical method has four stages. First, a portion of active starter is mixed with flour, water and salt. Second, the dough ferments in bulk for several hours; during this stage the baker may fold the dough at intervals to strengthen the gluten network. Third, the dough is divided and shaped, and left to prove, often overnight in a refrigerator, which slows the yeast while the bacteria continue to develop flavour. Finally, the loaf is baked at a high temperature, commonly in a heavy covered pot that traps steam during the first part of baking.

The proportion of water to flour, called hydration, strongly affects the result. Doughs with high hydration produce an open crumb with large irregular holes but are harder to handle. Lower hydration gives a tighter crumb that is easier to slice for sandwiches.

## Chemistry and nutrition

The acids produced during fermentation lower the pH of the dough. This inhibits the growth of moulds and some bacteria, so sourdough bread often stays fresh longer than bread made with baker's yeast alone. Long fermentation also breaks down some of the phytic acid in the flour, which may make certain minerals easier to absorb. Claims that sourdough is suitable for people with coeliac disease are not supported: the gluten remains in the bread, even if some of it is partly broken down.

## Regional traditions

Rye sourdough is traditional across northern and eastern Europe, where rye grows better than wheat in a cool climate. Dense rye loaves flavoured with caraway or coriander are common in Germany, Poland and the Baltic countries, and a fermented rye soup is eaten in Poland. In the United States, the city of San Francisco became associated with a particularly sour white bread during the gold rush of the nineteenth century. Flat breads leavened with fermented batter are also found in many other parts of the world, from Ethiopia to India.

## Revival

Interest in sourdough grew in the late twentieth century as small artisan bakeries opened in many cities. Home baking surged again during periods when people spent more time at home, and commercial yeast was for a time difficult to buy in some countries. Online forums, where bakers share photographs of their crumb and troubleshoot sluggish starters, have played a large part in spreading techniques that were once passed on only within bakeries.""",
    },
    {
        "key": "wiki/varnholm",
        "title": "Varnholm",
        "text": """Varnholm is a small town and former fishing port at the head of the Varnfjord on the west coast of the county of Esterlund. It has a population of about 6,400 and is the administrative centre of the municipality of the same name. The town is known for its wooden warehouses, its annual lamp festival, and a lighthouse on the island of Skarv that has guided ships into the fjord since the middle of the nineteenth century.

## Geography

The town lies on a narrow strip of level ground between the water and steep wooded hills that rise to more than 500 metres within a few kilometres of the shore. The River Astel enters the fjord at the eastern edge of the town, where its delta forms a broad area of salt marsh and mudflats used by wading birds in spring and autumn. The climate is oceanic, with mild winters for the latitude, cool summers and heavy rainfall throughout the year. Snow rarely lies for long in the town itself but is common on the surrounding hills.

The mouth of the fjord is sheltered by a chain of low rocky islands. The largest of these, Skarv, is about two kilometres long and was inhabited by farming families until the 1950s. The channel between Skarv and the mainland is deep but narrow, and it was the scene of frequent shipwrecks before the lighthouse was built.

## History

Archaeological finds suggest that the head of the fjord was settled by the early Iron Age. The name Varnholm is first recorded in a fourteenth-century charter in which the local church was granted the right to collect a tithe on dried fish. For several centuries the settlement remained a cluster of farms and boat sheds, dependent on fishing in the winter months and on small-scale farming in summer.

Varnholm grew rapidly in the nineteenth century when the herring fishery brought large shoals into the fjord for a period of about thirty years. Merchants built the long timber warehouses that still line the harbour front, and the population trebled. The lighthouse on Skarv was completed in 1857 after a petition from local merchants and shipmasters. When the herring disappeared in the 1880s, many families emigrated, and the town declined until a small shipyard and a canning factory opened at the turn of the century.

A fire in 1904 destroyed much of the old town centre. The town was rebuilt to a regular plan with wide streets intended to act as firebreaks, and most of the buildings in the centre date from the following decade. The warehouses on the waterfront survived the fire and are now protected as a group.

## Economy

The canning factory closed in 1971, and the shipyard now builds and repairs small workboats and ferries. Salmon farming in the outer fjord, tourism and public services are the largest employers. A regional college campus specialising in marine technology opened in 1996. Many residents commute to larger towns along the coast road, which was improved with a series of tunnels in the 2000s.

## Culture

The lamp festival, held on the darkest weekend of December, commemorates the lighting of the Skarv lighthouse. Residents place lanterns in their windows and along the harbour, and a procession of boats carries lights out to the island. The festival attracts visitors from across the region and has been held, with few interruptions, since the 1920s.

The Varnholm Museum occupies one of the restored warehouses and displays boats, fishing gear, photographs of the herring period and a reconstruction of a cannery workshop. The town church, rebuilt after the fire, contains a carved altarpiece saved from the medieval building.

## Transport

Varnholm is connected to the coastal highway by a road along the northern shore of the fjord. A car ferry crosses to the southern shore several times a day, and a fast passenger boat serves the outer islands in summer. The nearest airport is at Halden Bay, about ninety minutes away by road.""",
    },
    {
        "key": "wiki/tide_mill",
        "title": "Tide mill",
        "text": """A tide mill is a water mill driven by the rise and fall of the tide. A dam with a sluice gate is built across a suitable tidal inlet, or a section of a river estuary is enclosed to form a reservoir known as the mill pond. As the tide comes in, water flows through the gate into the pond. When the tide turns, the gate closes under the pressure of the water, and the miller releases the stored water through a channel that turns the water wheel.

## Operation

Because the mill can work only when the level outside has fallen well below the level in the pond, a tide mill typically runs for four to six hours in each tidal cycle. The working hours move forward by about fifty minutes each day, following the tide, so millers often had to work at night. Spring tides, which occur around the new and full moon, give a greater difference in height and therefore more power than neap tides.

Most tide mills used undershot or breastshot wheels, which suit a large flow of water falling a small height. Some later mills replaced the wheel with a turbine. The machinery inside was usually similar to that of an ordinary water mill, with millstones for grinding grain, although tide mills were also used to crush bark for tanning, to saw timber and to grind pigments.

## History

Tide mills are known from the early medieval period on the coasts of western Europe. Remains of timber mill structures dated by tree rings to the seventh century have been excavated in Ireland. Tide mills became common in the estuaries of Britain, France, Spain and the Low Countries during the later Middle Ages, and settlers built them in North America in the seventeenth and eighteenth centuries.

They declined in the nineteenth century as steam power offered a reliable source of energy that did not depend on the tide. Silting of mill ponds and the value of waterfront land also contributed to their closure. A few remained in use into the twentieth century.

## Surviving mills

Several tide mills have been restored as working museums, where visitors can watch grain being ground on days when the tide allows. Others survive as buildings converted to houses or offices, with the mill pond turned into a marina or a nature reserve. The principle of storing water at high tide and releasing it at low tide is also used, on a vastly larger scale, by modern tidal barrage power stations.""",
    },
    {
        "key": "wiki/glacier",
        "title": "Glacier",
        "text": """A glacier is a persistent body of dense ice that moves under its own weight. Glaciers form where the accumulation of snow exceeds its melting and sublimation over many years. As layers of snow build up, the lower layers are compressed into a granular form called firn and then into solid ice. Once the ice is thick enough, it begins to flow slowly downhill or outwards from its centre.

## Types

Glaciers are classified by size and by their relationship to the landscape. Valley glaciers are confined by the walls of a mountain valley and flow down it like slow rivers of ice. Cirque glaciers occupy bowl-shaped hollows high on mountainsides. Ice caps cover areas of less than fifty thousand square kilometres and bury the land beneath them, while ice sheets are larger still; today only Antarctica and Greenland carry ice sheets. Where glaciers reach the sea they may form floating ice shelves or end in cliffs from which icebergs break away, a process called calving.

## Movement

Glacier ice moves in two ways. The ice itself deforms, with crystals slowly sliding past one another under pressure, and the whole glacier may slide over its bed when meltwater lubricates the base. Speeds vary from a few centimetres to several metres a day; some outlet glaciers in Greenland move more than ten kilometres a year. Crevasses open where the ice is stretched, for example where the glacier flows over a steep step in its bed or around a bend.

## Landforms

Glaciers are powerful agents of erosion. They pluck blocks of rock from their beds and grind the bed with the debris they carry, producing U-shaped valleys, cirques, sharp ridges called arêtes and pyramidal peaks. When the ice melts, it leaves behind the material it carried. Moraines are ridges of this unsorted debris, while drumlins are smooth elongated hills shaped beneath moving ice. Large boulders carried far from their source and left stranded are known as erratics.

## Glaciers and climate

Because the size of a glacier reflects the balance between snowfall and melting, glaciers are sensitive indicators of climate. Most mountain glaciers around the world have been retreating since the late nineteenth century, and the rate of retreat has increased in recent decades. Melting glaciers contribute to sea-level rise and affect the water supply of regions that rely on meltwater during dry summers. Scientists measure changes using stakes drilled into the ice, repeated surveys and satellite observations.""",
    },
    {
        "key": "wiki/dry_stone_wall",
        "title": "Dry stone wall",
        "text": """A dry stone wall is a wall built from stones without any mortar to bind them together. The stability of the wall depends on the careful selection and placing of the stones and on the friction between them. Dry stone walls are found in upland farming regions across the world, where they serve as field boundaries, enclosures for livestock and retaining walls for terraces.

## Construction

A typical field wall is built as two outer faces that lean slightly towards each other, a profile known as the batter. The space between the faces is packed with small stones, called hearting, which stop the faces from moving inwards. At intervals, long through stones span the full width of the wall and tie the two faces together. The top is finished with a row of coping stones set on edge, which add weight and protect the courses below. A well-built wall is wider at the base than at the top and can stand for more than a century with little maintenance.

Builders follow a few simple rules. Each stone should be placed with its length running into the wall rather than along it, and every joint should be covered by a stone in the course above, a principle expressed as one on two and two on one. Stones should sit firmly without rocking, and the largest stones are used near the bottom.

## History

Some dry stone structures date from the Neolithic period, and walls enclosing prehistoric fields survive in parts of Ireland and the north of Britain. Many of the walls seen in British uplands today, however, were built during the enclosure of common land in the eighteenth and nineteenth centuries, when thousands of kilometres of wall were raised in a few decades. Teams of wallers were paid by the length of wall completed.

## Ecology

Dry stone walls provide habitat for a wide variety of plants and animals. Mosses, lichens and ferns grow on their faces, and small mammals, reptiles and insects shelter in the gaps between the stones. Walls also act as corridors along which wildlife moves across open country.

## Conservation

Many walls fell into disrepair in the twentieth century as farming changed and skilled labour became expensive. Associations of wallers now run training courses and competitions, and some governments pay farmers to restore historic walls. The craft was added to a list of intangible cultural heritage in 2018.""",
    },
    {
        "key": "wiki/beekeeping",
        "title": "Beekeeping",
        "text": """Beekeeping is the maintenance of colonies of bees, usually honey bees, in artificial hives by humans. A beekeeper, or apiarist, keeps bees in order to collect honey and beeswax, to pollinate crops, or to produce bees for sale to other beekeepers. The place where bees are kept is called an apiary or bee yard.

## History

People have collected honey from wild bee nests for many thousands of years, as rock paintings of honey gatherers show. Keeping bees in containers developed independently in several regions. In the ancient world, bees were kept in hives of clay, straw, wood or hollow logs. The traditional European straw hive, or skep, was simple to make but could not be opened without damaging the combs, and the colony was often killed when the honey was harvested.

The modern movable-frame hive was developed in the nineteenth century after the discovery that bees leave a gap of about eight millimetres between their combs. If frames are spaced to respect this gap, the bees build comb inside the frames rather than joining them together, and each frame can be lifted out for inspection. This made it possible to examine the brood, control swarming and harvest honey without destroying the colony.

## The colony

A honey bee colony consists of one queen, thousands of female workers and, in the warmer months, a few hundred males called drones. The queen lays all the eggs. Workers carry out every other task, changing their role with age: young workers clean cells and feed larvae, middle-aged workers build comb and guard the entrance, and older workers forage for nectar and pollen. A strong colony in summer may contain fifty thousand bees.

## Management

A beekeeper inspects each colony regularly during the active season to check that the queen is laying, that the colony has enough space and food, and that there are no signs of disease. Swarming, in which the old queen leaves with about half the workers to found a new colony, is a natural form of reproduction but reduces the honey crop, and beekeepers use several techniques to prevent it. In autumn the colony is checked for adequate stores and sometimes fed with sugar syrup before winter.

## Threats

Honey bees face a number of pests and diseases. The parasitic varroa mite, which spread from Asia during the twentieth century, feeds on developing bees and transmits viruses; it is now the most serious problem for beekeepers in most countries. Pesticides, loss of flowering plants and poor weather also affect colony health.""",
    },
    {
        "key": "wiki/compost",
        "title": "Compost",
        "text": """Compost is a mixture of ingredients used as plant fertiliser and to improve the physical, chemical and biological properties of soil. It is commonly prepared by decomposing plant and food waste and recycling organic materials. The resulting material is rich in plant nutrients and beneficial organisms such as bacteria, fungi and earthworms.

## Process

Composting is an aerobic process: the microorganisms that break down organic matter need oxygen, water and a balance of carbon and nitrogen. Materials rich in carbon, often called browns, include dry leaves, straw, cardboard and wood chips. Materials rich in nitrogen, called greens, include grass clippings, vegetable peelings and fresh manure. A mixture of roughly two to three parts brown to one part green, by volume, usually composts well.

In a well-managed heap the temperature rises within a few days as bacteria multiply, sometimes reaching sixty degrees Celsius or more. This hot phase kills many weed seeds and disease organisms. As the easily digested material is used up, the heap cools and fungi, worms and insects continue the breakdown. Turning the heap introduces fresh air and speeds up the process. Finished compost is dark, crumbly and smells of earth; depending on the method it may be ready in two months or take more than a year.

## Methods

Home gardeners use open heaps, closed bins, rotating tumblers and wormeries. In a wormery, special composting worms process kitchen scraps into a fine material called vermicompost. Bokashi, a method developed in Japan, ferments food waste in a sealed bucket before it is buried. Municipal composting facilities handle garden waste and food waste from households on a large scale, using long windrows turned by machines or enclosed vessels with forced aeration.

## Uses

Compost is used as a soil conditioner, a mulch and an ingredient in potting mixes. It improves the structure of clay soils, helps sandy soils hold water, and feeds the organisms that keep soil healthy. Because it releases nutrients slowly, it is less likely than soluble fertiliser to be washed into rivers.

## Problems

A heap that is too wet or too compacted becomes anaerobic and produces unpleasant smells. Meat, dairy products and cooked food can attract rats and are usually left out of open heaps. Some weeds and plant diseases survive in heaps that do not get hot enough.""",
    },
    {
        "key": "wiki/astel",
        "title": "River Astel",
        "text": """The River Astel is a river in the county of Esterlund. It rises on the plateau of the Kalvfjell at an altitude of about 900 metres and flows generally westwards for 74 kilometres before entering the Varnfjord at the town of Varnholm. Its catchment covers about 610 square kilometres of mountain, forest and farmland.

## Course

The upper Astel drains a wide basin of moorland and small lakes on the plateau. Below the lake of Storvatn the river descends through a narrow wooded gorge, where it falls more than 200 metres in a series of rapids and two waterfalls. The larger of these, Astelfossen, has a drop of 38 metres and is a popular destination for walkers. The middle course runs through a broad valley of farms and hamlets, where the river meanders across a flat floor of gravel and silt deposited after the last ice age. In its final few kilometres the river is tidal, and it reaches the fjord through a delta of channels and salt marsh.

## Hydrology

Flow in the Astel is highest in late spring, when snow melts on the plateau, and again in autumn, when Atlantic storms bring heavy rain. Floods in the lower valley were frequent until embankments were built in the 1950s. A small hydroelectric station at the foot of the gorge, completed in 1922, uses water diverted from above the waterfalls; its operating licence requires a minimum flow to be kept in the falls during the summer tourist season.

## Wildlife

The Astel is one of the most important salmon rivers on this part of the coast. Adult salmon return from the sea between June and September and spawn in the gravels of the middle river. Sea trout, eels and freshwater pearl mussels are also present. The delta is a protected area for wading birds and waterfowl, and otters are regularly seen along the lower river.

## Human use

Angling for salmon has been regulated by the riparian landowners since the nineteenth century, when visiting fishermen from abroad began to rent stretches of the river. Fishing rights remain an important source of income for farms in the valley. A walking trail follows the river from Varnholm to the gorge, passing the remains of several timber mills and a stone bridge built in 1811.""",
    },
    {
        "key": "wiki/papermaking",
        "title": "Papermaking",
        "text": """Papermaking is the manufacture of paper and cardboard, which are used widely for printing, writing and packaging, among many other purposes. Today almost all paper is made using industrial machinery, while handmade paper survives as a specialised craft and a medium for artists.

## History

Paper was invented in China. Early Chinese paper was made from the bark of mulberry trees, hemp waste and old fishing nets, which were soaked, pounded into pulp and spread on screens to dry. The technique spread along trade routes to Central Asia and the Islamic world in the eighth century, where papermakers used linen rags as their main raw material. Paper mills were established in Spain and Italy by the twelfth and thirteenth centuries and spread across Europe over the following centuries.

For hundreds of years the supply of rags limited the amount of paper that could be produced. In the nineteenth century inventors developed ways to make pulp from wood, first by grinding logs against a rotating stone and later by cooking wood chips with chemicals. Wood pulp made paper cheap enough for mass-circulation newspapers and books.

## Hand papermaking

In hand papermaking a worker dips a mould, a wooden frame covered with a fine wire or bamboo screen, into a vat of pulp suspended in water. As the mould is lifted, the water drains through the screen and the fibres mat together into a sheet. The sheet is transferred onto a felt, a process called couching, and stacks of sheets and felts are pressed to remove water before the sheets are hung to dry. Patterns woven into the screen leave thinner areas in the paper that can be seen when it is held up to the light; these are watermarks.

## Machine papermaking

A paper machine works on the same principle but continuously. Diluted pulp is sprayed onto a moving mesh belt called the wire, where water drains away and the fibres form a web. The web passes through presses and then over a long series of steam-heated drying cylinders. Modern machines can be more than a hundred metres long and produce a sheet ten metres wide at speeds above a hundred kilometres per hour.

## Recycling

Recovered paper is now a major source of fibre. It is pulped in water, cleaned, and in some cases de-inked before being made into new paper. Fibres shorten each time they are recycled, so fresh pulp is still needed to maintain strength.""",
    },
    {
        "key": "wiki/canal_lock",
        "title": "Canal lock",
        "text": """A lock is a device used for raising and lowering boats between stretches of water of different levels on river and canal waterways. The distinguishing feature of a lock is a fixed chamber in which the water level can be varied. Locks make a river navigable where it would otherwise be too shallow or too steep, and they allow canals to cross hilly country.

## Pound locks

The most common type is the pound lock, a chamber with gates at both ends. To raise a boat, the lower gates are opened and the boat enters the chamber. The lower gates are closed, and valves called paddles or sluices are opened to let water in from the upper level. When the water in the chamber reaches the upper level, the upper gates are opened and the boat continues on its way. Lowering a boat reverses the sequence. Each passage uses a chamber full of water, which must be replaced from reservoirs or streams feeding the summit of the canal.

Most lock gates are mitre gates, a pair of gates that meet at an angle pointing upstream. The pressure of the water pushes the gates tightly together, so they seal well and are easy to open only when the levels on both sides are equal. Mitre gates are often credited to engineers of the Italian Renaissance.

## Flights and staircases

Where a canal must climb a steep slope, locks are built close together in a flight. In a staircase, the top gate of one lock is also the bottom gate of the next, so that there is no pound of water between them. Staircases save space but are slow to operate and require careful attention to the order in which paddles are opened.

## Other methods

Locks are not the only way to change levels. Boat lifts carry vessels vertically in a tank of water, and inclined planes haul boats up a slope on wheeled carriages. These structures are faster than a long flight of locks and use little water, but they are more complex to build and maintain.

## Operation today

On many leisure waterways boaters work the locks themselves, using a windlass to wind the paddles and pushing the balance beams to open the gates. On busy commercial rivers the locks are large, powered and controlled by lock keepers who direct traffic by radio and signal lights.""",
    },
    {
        "key": "wiki/moss",
        "title": "Moss",
        "text": """Mosses are small, non-vascular, non-flowering plants in the division Bryophyta. They typically form dense green clumps or mats, often in damp or shady locations. There are roughly twelve thousand species. Mosses are commonly confused with lichens, hornworts and liverworts, although only the last two are close relatives.

## Structure

The individual plants are usually composed of simple leaves, generally only one cell thick, attached to a stem that may be branched or unbranched. Mosses have no true roots; instead they are anchored by thread-like rhizoids, and most of their water and nutrients are absorbed directly through the leaves. Because they lack the vascular tissue that carries water through larger plants, mosses rarely grow more than a few centimetres tall.

## Life cycle

Mosses reproduce by spores rather than seeds. The familiar green plant is the gametophyte, which produces egg and sperm cells. Sperm must swim through a film of water to reach the egg, which is one reason mosses are most common in moist habitats. The fertilised egg grows into a sporophyte, a slender stalk topped by a capsule that remains attached to the parent plant. When the capsule is ripe, a ring of teeth around its mouth opens and closes with changes in humidity, releasing spores gradually into the air. Many mosses can also spread by fragments that break off and grow into new plants.

## Ecology

Mosses are often among the first plants to colonise bare rock and disturbed ground, where they trap dust and build up a thin layer of soil. In forests they cover the ground and fallen logs, holding moisture and providing habitat for small invertebrates. Many mosses can survive long periods of drought in a dried state and resume growth within minutes of being wetted.

Peat mosses of the genus Sphagnum are especially important. They form extensive bogs in cool wet regions, where their dead remains accumulate as peat over thousands of years. Peatlands store a very large amount of carbon, and their drainage and cutting release it into the atmosphere.

## Uses

Sphagnum was once used as a wound dressing because of its absorbency and mild antiseptic properties. Dried mosses have been used to pack goods, to caulk log houses and to stuff mattresses. Gardeners use moss in hanging baskets and in Japanese-style gardens, while others try hard to remove it from their lawns.""",
    },
    {
        "key": "wiki/sundial",
        "title": "Sundial",
        "text": """A sundial is a device that tells the time of day when there is sunlight by using the position of the Sun in the sky. In the most common design, a flat plate called the dial is marked with lines indicating the hours, and a thin rod or sharp edge called the gnomon casts a shadow onto it. As the Sun moves across the sky, the shadow moves across the hour lines.

## Principle

The apparent motion of the Sun is caused by the rotation of the Earth about its axis. For a sundial to read correctly throughout the year, the edge of the gnomon that casts the shadow, called the style, must be parallel to the Earth's axis. It therefore points towards the celestial pole and makes an angle with the horizontal equal to the latitude of the place. A dial designed for one latitude will give incorrect readings if moved far to the north or south.

## Types

Horizontal dials, mounted on a pedestal in a garden, are the most familiar type. Vertical dials are fixed to the walls of buildings, especially churches, and must be designed for the direction the wall faces. Equatorial dials have a dial plate parallel to the equator and are the simplest to calculate, because the hour lines are equally spaced. Portable dials were made in many forms, including small folding dials carried in a pocket and ring dials that are held up towards the Sun.

## Sundial time and clock time

A sundial shows local apparent solar time, which differs from the time shown by clocks. Two corrections are needed. The first accounts for the difference between the observer's longitude and the central meridian of the time zone. The second, called the equation of time, accounts for the variation in the Sun's apparent speed through the year, caused by the tilt of the Earth's axis and the ellipticity of its orbit. The equation of time varies between about sixteen minutes fast and fourteen minutes slow. Many dials carry a table or a graph of the correction.

## Mottoes

Sundials often bear a motto, usually reflecting on the passing of time or the brevity of life. Such inscriptions, frequently in Latin, were a popular feature of dials on churches and country houses.""",
    },
    {
        "key": "wiki/tea_processing",
        "title": "Tea processing",
        "text": """Tea processing is the method by which the leaves of the tea plant, Camellia sinensis, are transformed into dried leaves for brewing. The categories of tea, including white, green, oolong and black, are distinguished mainly by the processing they undergo rather than by the variety of plant, although the cultivar and the growing conditions also influence the result.

## Plucking

Tea leaves are plucked by hand or by machine. For high-quality teas, pickers take only the bud and the top two leaves of each shoot. Leaves begin to wilt and oxidise soon after they are picked, so they must reach the factory quickly. The main harvest seasons and the altitude of the garden both affect the flavour.

## Withering

Freshly plucked leaves are spread out on racks or in troughs through which air is blown. Withering reduces the moisture content of the leaves and makes them soft and pliable enough to be rolled without breaking. It also begins chemical changes that develop aroma.

## Rolling and oxidation

Rolling breaks the cell walls of the leaf so that the juices inside are exposed to air. Enzymes in the leaf then oxidise the polyphenols, turning the leaf from green to copper and eventually dark brown. The extent of oxidation is the most important factor that separates the categories of tea. Black tea is fully oxidised. Oolong is partially oxidised, anywhere from lightly to heavily. Green tea is not oxidised at all: its leaves are heated soon after plucking, by steaming or pan firing, to destroy the enzymes before oxidation can begin.

In industrial production of black tea, many factories use the crush, tear, curl method, in which the leaves are passed through rollers with sharp teeth. This produces small granules that brew quickly and strongly and are widely used in tea bags.

## Drying and sorting

The leaves are dried with hot air to stop oxidation and reduce their moisture to a few per cent, which allows them to be stored. The dry tea is then sorted by particle size into grades, from whole leaves to fine dust. Grade names describe the size and appearance of the leaf rather than its flavour.

## Other teas

White tea receives the least processing: the buds and young leaves are simply withered and dried. Some teas are aged after processing, and certain compressed teas undergo a slow microbial fermentation over months or years that gives them an earthy character.""",
    },
]
