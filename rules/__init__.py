# Knowledge as data; shipped inside the wheel as the package `traindoctor._rules`.
