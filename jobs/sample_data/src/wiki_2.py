"""Encyclopedia articles, part 2 (authored for the datapipe sample corpus)."""

ARTICLES = [
    {
        "key": "wiki/orchard",
        "title": "Orchard",
        "text": """An orchard is an intentional planting of trees or shrubs that is maintained for food production. Orchards comprise fruit or nut-producing trees that are generally grown for commercial production. Orchards are also sometimes a feature of large gardens, where they serve an aesthetic as well as a productive purpose.

## Traditional orchards

Traditional orchards consist of widely spaced, tall trees grafted onto vigorous rootstocks. The grass beneath them was often grazed by sheep or cattle, or cut for hay, so that the orchard produced fruit and fodder from the same land. Such orchards are long-lived: apple and pear trees may crop for a century or more. They were once common around farms and villages in much of Europe, where local varieties were selected for cooking, dessert eating, cider or perry, or for keeping through the winter.

Many traditional orchards were grubbed up in the second half of the twentieth century as commercial growing moved to intensive systems and imported fruit became cheap. Conservation groups now encourage their restoration, because old trees with decaying wood support many insects, fungi, birds and bats.

## Modern commercial orchards

Modern orchards use trees grafted onto dwarfing rootstocks that limit their size. Trees are planted close together in rows, often trained against wires, and begin to bear fruit within two or three years. The small trees can be picked from the ground or from low platforms, and they are easier to prune and spray. A hectare of intensive orchard may hold several thousand trees.

## Management

Orchard work follows the seasons. Trees are pruned in winter to shape them and to let light into the canopy, and in some cases again in summer. Blossom in spring must be pollinated, usually by bees; many growers place hives in the orchard during flowering. Frost at blossom time can destroy a crop, and growers protect valuable orchards with wind machines, heaters or sprinkler systems. In early summer the fruitlets are thinned so that the remaining fruit grows to a good size. Harvest runs from midsummer for early cherries to late autumn for keeping apples.

## Community orchards

In recent decades many towns have planted community orchards on public land, where local people share the work and the fruit. Apple days and wassailing, a midwinter custom of singing to the trees to encourage a good harvest, have been revived in several places.""",
    },
    {
        "key": "wiki/elsbeth_marrow",
        "title": "Elsbeth Marrow",
        "text": """Elsbeth Marrow (1841–1919) was a botanist and illustrator known for her studies of mosses and liverworts and for her watercolour plates of coastal plants. Although she never held a university post, her collections and notebooks became an important reference for later researchers, and several species are named after her.

## Early life

Marrow was born in the harbour town of Port Alder, the second of five children of a ship's chandler. She was educated at home and at a small school for girls, where a teacher encouraged her interest in drawing. As a young woman she spent long periods with an aunt who kept a large garden on the edge of the moors, and it was there, she later wrote, that she first noticed the variety of mosses growing on the walls and stones.

## Work

From the 1860s Marrow collected systematically along the coast and in the hills inland, pressing specimens and recording each find in numbered notebooks with the date, place and habitat. She taught herself to use a microscope and drew the leaf cells and capsules of her specimens in great detail. She corresponded with several naturalists of the time, who sent her specimens to identify and relied on her drawings.

Her most substantial publication, a descriptive catalogue of the mosses of the western coast, appeared in two volumes in 1889 and 1894. It included more than three hundred species, each with a plate drawn by the author, and was praised for the accuracy of its illustrations. Because women were not admitted as full members of the regional natural history society until 1904, some of her early papers were read at meetings on her behalf by male colleagues.

## Later life

In later life Marrow turned increasingly to flowering plants of salt marshes and dunes, producing a series of watercolours that were exhibited in Port Alder in 1908. She continued to collect until a few years before her death. Her herbarium of some eleven thousand specimens and her notebooks were left to the town museum, which transferred them to a university herbarium in 1962.

## Legacy

Three species of moss and a species of lichen have been named in her honour. A selection of her watercolours was reproduced in a book published for the centenary of her death, and a footpath along the cliffs near Port Alder bears her name. Historians of science have cited her career as an example of the contribution made by amateur naturalists, and in particular by women, who worked outside the institutions of their day.""",
    },
    {
        "key": "wiki/hedgerow",
        "title": "Hedgerow",
        "text": """A hedgerow is a line of closely spaced shrubs and sometimes trees, planted and trained to form a barrier or to mark the boundary of an area, such as between neighbouring fields. Hedgerows are characteristic of the farmed landscapes of Britain, Ireland, northern France and parts of other European countries, where they have shaped the appearance of the countryside for centuries.

## Origins

Some hedgerows are remnants of woodland that was cleared around them, leaving a strip of trees and shrubs along a boundary. Others were deliberately planted, most commonly with hawthorn, which grows quickly, tolerates cutting and has sharp thorns that deter livestock. Many hedges in lowland England were planted during the enclosure of open fields in the eighteenth and nineteenth centuries. Older hedges tend to contain a greater variety of woody species, and a rough rule of thumb, now treated with caution, holds that a hedge gains about one species per century.

## Management

Left alone, a hedge grows upwards and becomes gappy at the base. Hedge laying is a traditional method of rejuvenating it: the stems are cut most of the way through near the ground, bent over at an angle and woven between upright stakes. The partly cut stems, called pleachers, remain alive and send up new shoots, producing a dense stock-proof barrier. Regional styles of hedge laying differ in the angle of the pleachers, the type of stakes and the finishing of the top. Today most hedges are trimmed by tractor-mounted flails, which is quick but can weaken them if done too often or too hard.

## Wildlife

Hedgerows are an important habitat. They provide food, shelter and nesting sites for birds, small mammals and insects, and they connect patches of woodland, allowing animals to move through farmland. Flowering shrubs supply nectar for pollinators in spring, while berries and nuts feed birds and mammals in autumn and winter. The grassy margins at the foot of a hedge add further habitat.

## Decline and protection

Large lengths of hedgerow were removed in the decades after the Second World War to create larger fields suitable for machinery. Concern about the loss of wildlife and landscape character led to grant schemes for planting and restoring hedges, and in some countries to regulations that require permission before an important hedgerow is removed.""",
    },
    {
        "key": "wiki/cartography",
        "title": "Cartography",
        "text": """Cartography is the study and practice of making and using maps. Combining science, aesthetics and technique, cartography builds on the premise that reality can be modelled in ways that communicate spatial information effectively. A map is always a simplification: the cartographer must decide what to show, how to represent it and what to leave out.

## History

The oldest surviving maps are drawings of local areas scratched on stone, bone or clay. Scholars of the ancient Mediterranean developed methods for measuring the size of the Earth and for representing its curved surface on a flat sheet, and a handbook of geography listing thousands of places by coordinates was compiled in the second century. Medieval world maps often placed religious and symbolic content alongside geography, while practical charts used by sailors showed coastlines in detail, crossed by lines radiating from compass roses.

The age of European oceanic exploration created demand for accurate charts and led to new projections. Printing made maps widely available, and national mapping agencies founded in the eighteenth and nineteenth centuries carried out systematic triangulation surveys that produced detailed topographic maps of whole countries.

## Projections

Any flat map of the whole Earth distorts something. A projection may preserve the shapes of small areas, the relative sizes of areas, true distances along certain lines, or true directions from a central point, but no projection preserves all of these at once. The choice of projection therefore depends on the purpose of the map. A projection that shows compass bearings as straight lines is useful for navigation but greatly exaggerates the size of regions near the poles.

## Elements of a map

Most maps include a title, a legend explaining the symbols, a scale, an indication of direction and a note of the source and date. Cartographers use variations in colour, size, shape and pattern to distinguish features and to show quantities, and they choose type styles and placement for labels so that names can be read without hiding important detail. Relief may be shown with contour lines, shading or layers of colour.

## Digital cartography

Since the late twentieth century most maps have been produced with computers. Geographic information systems store spatial data in layers that can be combined, analysed and displayed at different scales. Satellite positioning and aerial imagery allow maps to be updated quickly, and online maps that can be panned and zoomed have become part of everyday life. Volunteer projects in which members of the public contribute map data have produced detailed free maps of many parts of the world.""",
    },
    {
        "key": "wiki/letterpress",
        "title": "Letterpress printing",
        "text": """Letterpress printing is a technique of relief printing in which a printing press makes many copies by repeatedly pressing an inked, raised surface against sheets or a continuous roll of paper. A worker composes and locks movable type into the bed of the press, inks it, and presses paper against it to transfer the ink from the type, which creates an impression on the paper.

## History

Printing from movable type was first developed in East Asia, where type was made of baked clay, wood and later metal. In Europe, a system combining cast metal type, an oil-based ink and a screw press adapted from those used for pressing grapes appeared in the middle of the fifteenth century. The new method spread rapidly, and within a few decades presses were operating in hundreds of towns. Letterpress remained the main method of printing books, newspapers and posters for about five hundred years.

The nineteenth century brought iron hand presses, which were stronger and gave a more even impression, and then powered cylinder presses and rotary presses that could print thousands of sheets an hour. Typesetting machines that cast whole lines or individual letters from molten metal replaced much hand composition at the end of the century.

## Composition

In hand composition, the compositor picks individual letters from a type case and assembles them in a composing stick, adding spaces to justify each line to the same width. Thin strips of lead are placed between lines to adjust the spacing, a practice that gave the word leading to typography. The completed page is tied up with string, placed in a steel frame called a chase and locked in place with wedges before printing.

## Decline and revival

In the second half of the twentieth century offset lithography and then digital printing replaced letterpress for almost all commercial work. Presses and type were scrapped in large numbers. From the 1990s, however, designers and artists rediscovered letterpress, particularly for wedding invitations, business cards and art prints. Modern practitioners often print from photopolymer plates made from digital designs and favour a deep impression into soft, thick paper, which earlier printers would have considered a fault.""",
    },
    {
        "key": "wiki/wind_turbine",
        "title": "Wind turbine",
        "text": """A wind turbine is a device that converts the kinetic energy of wind into electrical energy. Wind turbines are manufactured in a wide range of sizes, from small turbines used to charge batteries on boats and in remote homes to large machines with rotors more than two hundred metres across that supply electricity to the grid. Groups of turbines built together are known as wind farms.

## Design

The most common design today is the horizontal-axis turbine with three blades facing into the wind. The blades are shaped like aircraft wings: air flowing over them creates lift, which turns the rotor. The rotor drives a generator housed in a streamlined casing called the nacelle at the top of a tall tower, either through a gearbox that increases the speed of rotation or directly in gearless designs. Sensors measure the wind direction, and motors turn the nacelle so that the rotor faces the wind.

The power available in the wind increases with the cube of the wind speed, so a site with slightly stronger winds can produce much more energy. Towers are tall because the wind is stronger and steadier away from the ground. A turbine starts generating at a low wind speed, reaches its rated power in a moderate breeze, and shuts down in very high winds to protect itself, turning the blades edge-on to the wind.

## Offshore wind

Turbines placed at sea benefit from stronger and more consistent winds and can be built larger than on land, where transport of the blades by road limits their size. Most offshore turbines stand on foundations fixed to the seabed in shallow water, while floating designs anchored by cables allow turbines to be placed in deeper water. Offshore construction and maintenance are expensive and depend on suitable weather.

## Issues

The output of a wind farm varies with the weather, so grid operators must balance it with other sources, storage or flexible demand. Turbines can affect birds and bats, and planners try to avoid important migration routes. Some residents object to their visual impact and noise, while others welcome the income that wind farms bring to rural communities. At the end of their working life the towers and generators are largely recyclable, but finding uses for old blades made of composite materials remains a challenge.""",
    },
    {
        "key": "wiki/sea_glass",
        "title": "Sea glass",
        "text": """Sea glass is glass found on beaches along oceans or seas. These pieces of glass have been tumbled and ground by waves and sand until their edges are smooth and rounded and their surface is frosted. Similar glass found on the shores of lakes is often called beach glass. Collecting sea glass is a popular hobby, and the finest pieces are used in jewellery and decorative work.

## Formation

Most sea glass begins as broken bottles, jars, tableware and window glass that were thrown into the sea or washed into it from dumps and rivers. The pieces are rolled against sand and stones by the surf, which rounds their edges. Over a long period, water also leaches soda and lime from the surface of the glass, leaving tiny pits that give the characteristic frosted appearance. Genuine sea glass may take twenty to fifty years to develop this surface. Artificial beach glass is made by tumbling new glass in machines, but it usually looks more uniform and lacks the fine pitting of glass weathered by the sea.

## Colours

The colour of a piece reveals something of its origin. White, brown and green are the most common colours because they were used for beer, wine and soft drink bottles. Pale aqua pieces often come from older bottles and window glass. Cobalt blue, which was used for medicine and poison bottles, is much rarer, and red, orange and yellow are among the scarcest finds. Collectors prize unusual pieces such as bottle stoppers, marbles and fragments with embossed lettering.

## Decline

As glass bottles have been replaced by plastic and as coastal dumping has ended, less new sea glass is entering the sea. On some well-known beaches collecting has become so popular that little remains, and a few places restrict removal. Collectors have formed associations that record finds and study the history of the glass industry through the fragments that wash ashore.""",
    },
    {
        "key": "wiki/barometer",
        "title": "Barometer",
        "text": """A barometer is a scientific instrument used to measure air pressure. Because pressure tends to change with the weather, barometers are used to forecast short-term changes, and many measurements of air pressure are used within surface weather analysis to help find troughs, pressure systems and frontal boundaries.

## Mercury barometer

The mercury barometer was devised in the seventeenth century. It consists of a glass tube, about a metre long, closed at the top and filled with mercury, standing upside down in an open dish of mercury. The mercury in the tube falls until the weight of the column is balanced by the pressure of the atmosphere on the surface of the dish, leaving a vacuum at the top of the tube. At sea level the column stands about 760 millimetres high. When air pressure rises, the column rises; when it falls, the column falls. Because mercury is toxic, such barometers are now rare outside collections.

## Aneroid barometer

The aneroid barometer, invented in the nineteenth century, uses no liquid. Its main component is a small, flexible metal box called an aneroid cell, from which most of the air has been removed. Changes in external air pressure cause the cell to expand or contract slightly, and a system of levers and springs magnifies these movements and turns a pointer on a dial. Aneroid barometers are compact and robust, and the familiar household barometer, often mounted on a decorative wooden case with words such as rain, change and fair on its dial, is of this type. A barograph uses the same mechanism to draw a continuous record on a rotating paper drum.

## Forecasting

A falling barometer usually indicates that a low-pressure system is approaching, bringing cloud, wind and rain, while a rising barometer suggests improving weather. The rate of change is more informative than the actual reading: a rapid fall often warns of a storm. Sailors and farmers relied on barometers long before national weather services existed.

## Corrections

Air pressure decreases with height, so readings taken at different altitudes must be adjusted to sea level before they can be compared. Mercury barometers also require corrections for temperature and for the local strength of gravity. Electronic pressure sensors are now built into weather stations, aircraft instruments and mobile phones.""",
    },
    {
        "key": "wiki/quillstack",
        "title": "Quillstack",
        "text": """Quillstack is an open-source software library for building static documentation websites from plain-text source files. It is written in Python and distributed under a permissive licence. Quillstack reads pages written in a lightweight markup language, applies templates and produces a folder of HTML files that can be served by any web server.

## History

The project was started in 2016 by a small group of developers who maintained documentation for several scientific software packages and wanted a simpler alternative to the tools they were using. The first public release appeared in 2017. Version 2.0, released in 2020, introduced a plugin system and incremental builds. Version 3.0, released in 2023, replaced the configuration format with a single declarative file and dropped support for older versions of Python.

## Features

Quillstack builds a site from a source directory containing pages, images and a configuration file. Its main features include:

- cross-references between pages that are checked at build time, so that broken internal links cause a warning or an error;
- automatic generation of API reference pages from the docstrings of Python modules;
- a full-text search index that runs entirely in the reader's browser;
- versioned documentation, in which several releases of a project are built side by side;
- themes based on a templating language, with a default theme designed for readability on small screens.

Incremental builds keep a cache of rendered pages and their dependencies, so that editing one page rebuilds only the pages affected by the change. On large projects this reduces build times from minutes to seconds.

## Plugins

Plugins can add new markup directives, modify pages before or after rendering, and write extra output files. Commonly used plugins generate diagrams from text descriptions, insert the output of code examples, and produce sitemaps for search engines. Plugins are ordinary Python packages that declare an entry point, and they are enabled by listing them in the configuration file.

## Reception

Quillstack is used by a number of research software projects and small companies. Reviewers have praised its speed and the clarity of its error messages, while noting that its theme ecosystem is smaller than those of older documentation tools. The project is maintained by volunteers and funded in part by donations and small grants.""",
    },
    {
        "key": "wiki/rainwater_harvesting",
        "title": "Rainwater harvesting",
        "text": """Rainwater harvesting is the collection and storage of rain, rather than allowing it to run off. Rainwater is collected from a roof-like surface and redirected to a tank, cistern, deep pit, aquifer or reservoir, from which it can be used later. Harvesting rain is one of the oldest methods of supplying water for households, livestock and crops, and it remains essential in many dry regions.

## Systems

A simple domestic system consists of a roof, gutters, a downpipe and a storage tank. The roof is the catchment; its area and material determine how much water can be collected. A roof of one hundred square metres receiving five hundred millimetres of rain a year can in principle yield about fifty thousand litres, although some water is always lost to evaporation, splashing and overflow. A first-flush device diverts the first few litres of each shower, which carry dust, leaves and bird droppings from the roof, away from the tank. Screens keep out leaves and mosquitoes.

Tanks may be placed above ground or buried. Above-ground tanks are cheaper and easier to inspect, while buried tanks keep the water cool and dark, which limits the growth of algae. Water is drawn off by gravity or by a small pump.

## Uses

In many places harvested rain is used for watering gardens, flushing toilets and washing clothes, which reduces demand on the public supply. Where there is no other source, rainwater is also used for drinking, after filtration and disinfection. Larger schemes collect runoff from paved areas or hillsides and store it in ponds or direct it into the ground to recharge aquifers.

## Traditional methods

Many societies developed sophisticated ways of storing rain. Cisterns cut into rock and lined with waterproof plaster supplied towns around the Mediterranean for thousands of years. In arid parts of South Asia, stepwells and village tanks captured monsoon rains, and traditional earth dams across small streams slowed runoff so that it soaked into the soil.

## Benefits and limits

Harvesting rain reduces the load on urban drainage during storms and can lower water bills. Its reliability depends on the local pattern of rainfall: in climates with a long dry season, a very large tank is needed to carry water through to the next rains. Water quality must be monitored where it is used for drinking.""",
    },
    {
        "key": "wiki/harbour_gazette",
        "title": "The Harbour Gazette",
        "text": """The Harbour Gazette is a local newspaper serving the town of Port Alder and the surrounding coast. It was founded in 1868 as a weekly paper reporting shipping movements, market prices and local news, and it has been published continuously since then, apart from a short interruption in 1941 when its printing works were damaged by fire.

## History

The first issue was produced by a printer and a schoolmaster who had previously published a small almanac for fishermen. In its early decades the paper devoted much of its space to the arrivals and departures of vessels, the prices of fish and grain, notices of auctions and reports from the town council. It became a daily in 1923, when the expansion of the port brought a larger readership and more advertising.

For most of the twentieth century the Gazette was owned by the same family. It was sold in 1988 to a regional newspaper group, which moved printing to a central plant and reduced the paper to five issues a week. In 2015 the print edition returned to weekly publication, while daily news moved to the paper's website.

## Content

The Gazette covers local government, courts, schools, business, sport and community events, as well as the affairs of the port and the fishing fleet. Its letters page has long been a forum for debate about local issues, and its annual awards for community volunteers are well established. A weekly column on the history of the town, drawing on the paper's own archive, has appeared since the 1970s.

## Archive

The paper's archive of bound volumes, photographs and glass-plate negatives was transferred to the county record office in 2009. A project to digitise the issues published before 1950 was completed in 2021, and the scanned pages can be searched online. Historians have used the archive to study the decline of the local herring fishery, the development of tourism and the effects of two world wars on the town.

## Recognition

The Gazette has won several regional awards for local journalism, including recognition for its reporting on coastal flooding in 2014 and on the closure of the town's hospital maternity unit.""",
    },
    {
        "key": "wiki/light_pollution",
        "title": "Light pollution",
        "text": """Light pollution is the presence of unwanted, inappropriate or excessive artificial lighting. In a descriptive sense, the term refers to the effects of any poorly implemented lighting, during the day or night. Light pollution can be understood not only as a phenomenon resulting from a specific source or kind of pollution, but also as a contributor to the wider, collective impact of various sources of pollution.

## Forms

Several forms of light pollution are commonly distinguished. Skyglow is the brightening of the night sky over inhabited areas, caused by light scattered in the atmosphere; it can be seen as a dome of light above a town from many kilometres away. Glare is excessive brightness that causes visual discomfort or reduces the ability to see, for example from unshielded street lamps or floodlights. Light trespass is light that falls where it is not wanted, such as a security light shining into a neighbour's bedroom. Clutter describes excessive groupings of lights, as in brightly lit commercial streets.

## Effects

Skyglow has made the Milky Way invisible to a large proportion of the world's population. Astronomers were among the first to campaign against light pollution, as it reduces the number of faint objects that can be observed and has forced observatories to be built in remote locations.

Artificial light at night also affects wildlife. Many insects are attracted to lights and die of exhaustion or are eaten by predators. Newly hatched sea turtles, which find the sea by moving towards the brighter horizon, can be led inland by coastal lighting. Migrating birds may be disoriented by lit buildings, and the timing of activity and breeding in many species is influenced by light. In humans, exposure to light at night can disrupt sleep and the daily rhythms of the body.

## Reduction

Light pollution can be reduced by using lights only where and when they are needed, by shielding fittings so that light is directed downwards, by using the lowest adequate brightness and by choosing warmer colours, which scatter less in the atmosphere. Some towns have adopted lighting ordinances, and areas with exceptionally dark skies have been designated as dark-sky parks or reserves, where lighting is controlled and stargazing is promoted to visitors.""",
    },
    {
        "key": "wiki/salt_marsh",
        "title": "Salt marsh",
        "text": """A salt marsh is a coastal ecosystem in the upper coastal intertidal zone between land and open salt water or brackish water that is regularly flooded by the tides. It is dominated by dense stands of salt-tolerant plants such as herbs, grasses and low shrubs. Salt marshes form in sheltered places such as estuaries, the landward side of barrier islands and spits, and bays where wave energy is low and fine sediment can settle.

## Zonation

Salt marsh vegetation is arranged in zones according to how often each level is flooded by the tide. The lowest parts, covered by almost every tide, are colonised by pioneer plants that tolerate long immersion, and these trap sediment and slowly raise the surface. Higher up, where flooding occurs only on the highest tides, a greater variety of plants grows, including sea lavender, sea aster and various grasses. At the upper edge the marsh merges with freshwater vegetation or dry land. The marsh is crossed by a branching network of creeks, which fill and drain with each tide, and it often contains shallow pools called pans.

## Ecology

Salt marshes are among the most productive ecosystems on Earth. Dead plant material is broken down by bacteria and fungi and supports invertebrates that are eaten by fish and birds. Many fish use the creeks as nurseries, and the marshes provide feeding and roosting sites for large numbers of wading birds and wildfowl, especially in winter and during migration.

## Value to people

Marshes protect coasts by absorbing wave energy and reducing erosion, and they trap pollutants and nutrients carried by rivers. They store carbon in their waterlogged soils, in some cases for thousands of years. Traditionally, marshes were grazed by sheep and cattle, cut for hay and used for gathering samphire and other plants.

## Loss and restoration

Large areas of salt marsh have been drained and embanked for agriculture, ports and housing. Where sea walls prevent marshes from migrating inland as the sea level rises, the marsh is squeezed between the wall and the sea and gradually disappears. In some places sea walls have been deliberately breached to allow tides back onto former farmland, a process known as managed realignment, so that new marsh can develop.""",
    },
]
