'''Header and licence boilerplate for the books/ texts (an invented "Open Shelf Library").

Every book carries the same long licence footer and one of two header styles, like the
headers of real public-domain e-text collections: a deliberate near-duplicate trap for dedup
(shared boilerplate must not make two different books look like copies of each other).
'''

HEADER_A = """The Open Shelf Library eBook of {title}

Anyone, anywhere, may read this ebook without paying for it. You may copy it, share it or
use it in new work under the Open Shelf Library Terms of Use, which are printed at the end
of this file and on the Library's website. The book is in the public domain in the United
States; readers elsewhere should check the copyright rules of their own country before
copying or publishing it.

Title: {title}

Author: {author}

Release date: {release} [eBook #{ebook_no}]

Language: English

Original publication: {original}

Credits: {credits}


*** START OF THE OPEN SHELF LIBRARY EBOOK {upper_title} ***
"""

HEADER_B = """The Open Shelf Library EBook of {title}, by {author}

This eBook may be read by anyone, anywhere, free of charge.  You may
copy it, share it or use it in new work under the Open Shelf Library
Terms of Use printed at the end of this file.


Title: {title}

Author: {author}

Release Date: {release} [EBook #{ebook_no}]
Last Updated: {updated}

Language: English

Character set encoding: UTF-8

Produced by {credits}

*** START OF THIS OPEN SHELF LIBRARY EBOOK {upper_title} ***
"""

FOOTER = """*** END OF THE OPEN SHELF LIBRARY EBOOK {upper_title} ***


A corrected edition of this file, if one is ever made, will be given a new number, and this
edition will be kept in the archive under its old one.

The text of this book was transcribed from a printed edition whose copyright has expired.
Nobody owns the words any longer, and you are welcome to copy them, print them, read them
aloud, quote them, translate them or turn them into something new without asking anyone.
The name "Open Shelf Library", on the other hand, is a registered mark of the Open Shelf
Library Trust. Please do not use it to sell copies of this file, and please remove it if
you publish a changed version, so that readers are not misled about what they are reading.
The conditions below explain this in more detail. They are longer than we would like, but
they protect the volunteers who made this edition and the readers who rely on it.


THE OPEN SHELF LIBRARY TERMS OF USE
PLEASE READ THESE TERMS BEFORE SHARING THIS FILE

Part 1. Using and sharing this file

1.1. Reading, printing or sharing this file means that you accept these terms. If you do
not accept them, please delete your copy. If somebody charged you money for this file and
you do not accept the terms, ask them for your money back; paragraph 1.9 explains how.

1.2. The Trust holds no copyright in the words of this book, which are in the public domain
in the United States and in many other countries. The Trust does hold rights in the
collection as a whole, in the Open Shelf Library name and in the logo that appears on its
website. Most of what you might want to do with this book needs no permission at all.

1.3. Copyright law differs from one country to another and changes from time to time. If
you live outside the United States, it is your responsibility to find out whether this
work is free of copyright where you are before you copy or publish it. The Trust cannot
give legal advice and makes no promise about the status of the work in any other country.

1.4. When you share this file unchanged and free of charge, keep these terms attached to
it. That is all you need to do. The short notice at the top of the file must stay in
place, and anybody who receives a copy from you must be able to read these terms.

1.5. You may convert this file into other formats, such as a web page, a word processor
document or an electronic reader format, as long as the reader can still find these terms
and can still get the plain text version if they ask for it.

1.6. If you want to sell copies that carry the Open Shelf Library name, write to the Trust
first. We usually agree, and we usually ask for a modest share of the proceeds, which pays
for the servers and for the scanning of new books. If you remove the name and every
mention of the Library, you may sell the text like any other public domain work.

1.7. Volunteers check every page of every book against the printed original, often more
than once. Mistakes still slip through: a misread letter, a dropped line, a footnote in
the wrong place. If you find one, please tell us through the corrections page on the
Library's website, giving the book number and the sentence where the error occurs.

1.8. NO WARRANTY. THIS FILE IS PROVIDED AS IT IS, WITHOUT ANY PROMISE THAT IT IS COMPLETE,
ACCURATE OR FIT FOR ANY PARTICULAR USE. THE TRUST, ITS VOLUNTEERS AND ANYONE WHO SHARES THIS
FILE UNDER THESE TERMS ARE NOT RESPONSIBLE FOR ANY LOSS OR DAMAGE THAT RESULTS FROM USING IT,
EVEN IF THEY WERE TOLD THAT SUCH LOSS OR DAMAGE WAS POSSIBLE. SOME PLACES DO NOT ALLOW THESE
LIMITS, IN WHICH CASE THEY APPLY ONLY AS FAR AS THE LAW ALLOWS.

1.9. If you paid for a copy of this file and it turns out to be damaged or incomplete, tell
the seller within ninety days. They must either give you a working copy or return what you
paid. This is the only remedy these terms offer.

1.10. If any part of these terms cannot be enforced where you live, the rest of them still
apply.

Part 2. Why the Library exists

The Open Shelf Library began as one person's hobby: typing out old books that had fallen out
of print so that friends could read them on their computers. It has grown into a collection
of tens of thousands of books, prepared almost entirely by volunteers who scan pages,
correct the text, check the formatting and write the catalogue entries. We believe that
books whose copyright has run out belong to everybody, and that they should be easy to
find and easy to read on any device, old or new, expensive or cheap.

Part 3. The Open Shelf Library Trust

The Trust is a small non-profit organisation. It pays for the Library's servers, keeps the
catalogue in order, answers letters and looks after the Library's name. It has no
shareholders and pays no dividends. Its office is at 40 Lantern Row, Suite 3, Concord, and
its website gives current contact details for readers, volunteers and donors.

Part 4. Supporting the Library

Almost all of the Library's income comes from small donations by readers. A gift of any size
helps to keep the collection online and to pay for the scanning of new books. If you would
rather give time than money, the Library is always glad of new proofreaders; you can start
with a single page, and there is no minimum commitment. Details of both are on the website.

Part 5. About the books in the collection

Our editions are usually made from one printed copy, checked where possible against others.
We do not try to reproduce any single printed edition exactly, and we sometimes correct
obvious printers' errors, which are listed in a note at the end of the book when they are
numerous. Spelling and punctuation are otherwise left as the author wrote them, including
spellings that look old-fashioned today.

The Library's website has a catalogue, a search page and a list of books added in the last
month. It also explains how to report an error, how to become a volunteer and how to sign up
for the monthly newsletter, which announces new books and describes work in progress.
"""

# Book metadata. `source` names the prose file in this folder; `derive_from` + `ops` make a
# re-release of another book (different header, a few corrected or introduced typos).
BOOKS = [
    {
        "key": "book/lamplighter",
        "file": "the-lamplighter-of-varnholm.txt",
        "source": "lamplighter.txt",
        "title": "The Lamplighter of Varnholm",
        "author": "Agnes Thorsby",
        "ebook_no": "70412",
        "release": "March 4, 2023",
        "original": "Harbour & Wren, 1911",
        "credits": "Ellen Marsh and the Online Proofreading Circle",
        "header": "A",
    },
    {
        "key": "book/lamplighter_rerelease",
        "file": "lamplighter-of-varnholm-2019-edition.txt.gz",
        "derive_from": "book/lamplighter",
        "title": "The Lamplighter of Varnholm",
        "author": "Agnes Thorsby",
        "ebook_no": "58830",
        "release": "February 11, 2019",
        "updated": "June 2, 2020",
        "credits": "Ellen Marsh, David Kerr and the Online Proofreading Circle (This file was produced from images generously made available by a university library.)",
        "header": "B",
        "ops": [
            ("replace", "the harbour master's", "the harbour-master's"),
            ("replace", "to-morrow", "tomorrow"),
            ("replace", "Skarv light", "Skarv Light"),
            ("replace", "wicks", "wieks"),
        ],
    },
    {
        "key": "book/letters_on_walking",
        "file": "letters-on-walking.txt.gz",
        "source": "letters_on_walking.txt",
        "title": "Letters on Walking",
        "author": "Thomas Ashcombe",
        "ebook_no": "71188",
        "release": "August 19, 2023",
        "original": "privately printed, 1898",
        "credits": "Ruth Calloway and the Online Proofreading Circle",
        "header": "A",
    },
    {
        "key": "book/salt_road",
        "file": "the-salt-road.txt",
        "source": "salt_road.txt",
        "title": "The Salt Road, and Other Stories of the Coast",
        "author": "Hester Vane",
        "ebook_no": "72045",
        "release": "November 2, 2023",
        "original": "Coastline Press, 1907",
        "credits": "Ellen Marsh and the Online Proofreading Circle",
        "header": "A",
    },
    {
        "key": "book/bees",
        "file": "a-small-treatise-on-bees.txt",
        "source": "treatise_on_bees.txt",
        "title": "A Small Treatise on Bees, for the Use of Cottagers",
        "author": "Rev. Josiah Pardew",
        "ebook_no": "72301",
        "release": "December 9, 2023",
        "original": "J. Pardew, 1872",
        "credits": "Ruth Calloway and the Online Proofreading Circle",
        "header": "A",
    },
]
